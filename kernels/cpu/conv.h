// 2-D convolution (cross-correlation, as in PyTorch) on contiguous NCHW raw pointers: forward
// and the two backwards, each with a query for the scratch bytes the caller must provide.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cpu {

// input [N, C, H, W], weight [O, C / groups, kH, kW], bias [O], output [N, O, out_h, out_w].
struct Conv2dParams {
  std::int64_t N = 1, C = 1, H = 1, W = 1;
  std::int64_t O = 1;
  std::int64_t kH = 1, kW = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;

  // floor((H + 2 pad - dilation (k - 1) - 1) / stride) + 1; meaningful once validated.
  std::int64_t out_h() const;
  std::int64_t out_w() const;
};

// Throws frugal::Error naming the parameters when they describe no convolution: sizes below
// 1 (N may be 0), negative padding, channels not divisible by groups, an output below 1x1.
void validate_conv2d(const Conv2dParams& p);

// Convolutions split work across threads only where each thread gets at least this many
// multiply-adds (default 65536): below that a fork and a workspace slot cost more than they
// save. Tests lower it to 1 to run the threaded paths on small shapes.
void set_conv_min_work_per_thread(std::int64_t macs);
std::int64_t conv_min_work_per_thread();
// How a convolution is computed; each call picks the path itself, this only reports it.
enum class ConvPath {
  kIm2col,     // im2col per sample (tiled over output rows) + gemm; col2im for grad input
  kPointwise,  // 1x1, stride 1, no padding, float/double: gemm straight on the tensors
  kDepthwise,  // groups == C == O: a direct kernel per channel plane
  kShifted,    // stride 1, >= 8 channels per group: one GEMM per tap on a padded sample
};
template <class T>
ConvPath conv2d_path(const Conv2dParams& p);

// Workspace: each function below needs `*_workspace_bytes(p, threads)` bytes of scratch
// (0 means none; a null pointer is fine then), for use by `threads` threads. Any alignment
// will do. A call runs on min(get_num_threads(), threads the workspace was sized for) threads,
// so a workspace sized for fewer threads only costs speed; one too small for a single thread
// throws frugal::Error. Results are deterministic for a given thread count.
// T: float, double, Half, BFloat16 (16-bit types compute in float in the workspace).
template <class T>
std::size_t conv2d_forward_workspace_bytes(const Conv2dParams& p, int threads);
template <class T>
std::size_t conv2d_backward_input_workspace_bytes(const Conv2dParams& p, int threads);
template <class T>
std::size_t conv2d_backward_weight_workspace_bytes(const Conv2dParams& p, int threads);

// output = conv(input, weight) + bias; bias may be null.
template <class T>
void conv2d_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                    T* output, void* workspace, std::size_t workspace_bytes);

// grad_input [N, C, H, W] = d(output)/d(input)^T grad_output; overwritten, not accumulated.
template <class T>
void conv2d_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                           T* grad_input, void* workspace, std::size_t workspace_bytes);

// grad_weight [O, C / groups, kH, kW] and, when grad_bias is not null, grad_bias [O] (the sum
// of grad_output over N, H, W); both overwritten, not accumulated.
template <class T>
void conv2d_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                            T* grad_weight, T* grad_bias, void* workspace,
                            std::size_t workspace_bytes);

}  // namespace frugal::kernels::cpu
