// The public conv entry points: parameter checks, the choice of path (depthwise, pointwise or
// im2col), the workspace queries that mirror that choice, and the binding of a workspace.
#include "kernels/cpu/conv.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/parallel.h"

namespace frugal::kernels::cpu {

namespace {

template <class T>
constexpr bool kNative = std::is_same_v<T, float> || std::is_same_v<T, double>;

std::string describe(const Conv2dParams& p) {
  auto s = [](std::int64_t v) { return std::to_string(v); };
  return "input [" + s(p.N) + ", " + s(p.C) + ", " + s(p.H) + ", " + s(p.W) + "], " + s(p.O) +
         " output channels, kernel " + s(p.kH) + "x" + s(p.kW) + ", stride " + s(p.stride_h) + "x" +
         s(p.stride_w) + ", padding " + s(p.pad_h) + "x" + s(p.pad_w) + ", dilation " +
         s(p.dilation_h) + "x" + s(p.dilation_w) + ", groups " + s(p.groups);
}

std::int64_t out_size(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad,
                      std::int64_t dilation) {
  const std::int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
  // Floor division, so that a kernel wider than the padded input gives a size below 1.
  return (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
}

}  // namespace

std::int64_t Conv2dParams::out_h() const { return out_size(H, kH, stride_h, pad_h, dilation_h); }
std::int64_t Conv2dParams::out_w() const { return out_size(W, kW, stride_w, pad_w, dilation_w); }

void validate_conv2d(const Conv2dParams& p) {
  const char* problem = nullptr;
  if (p.N < 0 || p.C < 1 || p.H < 1 || p.W < 1 || p.O < 1) {
    problem = "sizes must be at least 1 (the batch may be 0)";
  } else if (p.kH < 1 || p.kW < 1) {
    problem = "the kernel must be at least 1x1";
  } else if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1) {
    problem = "stride and dilation must be at least 1";
  } else if (p.pad_h < 0 || p.pad_w < 0) {
    problem = "padding must not be negative";
  } else if (p.groups < 1 || p.C % p.groups != 0 || p.O % p.groups != 0) {
    problem = "groups must divide both input and output channels";
  } else if (p.out_h() < 1 || p.out_w() < 1) {
    problem = "the (dilated) kernel is larger than the padded input";
  }
  FRUGAL_CHECK(problem == nullptr,
               std::string("conv2d: ") + (problem ? problem : "") + " (" + describe(p) + ")");
}

template <class T>
ConvPath conv2d_path(const Conv2dParams& p) {
  if (p.groups == p.C && p.O == p.C && p.C > 1) return ConvPath::kDepthwise;
  if (kNative<T> && p.kH == 1 && p.kW == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 &&
      p.pad_w == 0)
    return ConvPath::kPointwise;
  // A tap's GEMM has depth C / groups: below 8 the column buffer's single deep GEMM wins.
  if (p.stride_h == 1 && p.stride_w == 1 && p.C / p.groups >= 8) return ConvPath::kShifted;
  return ConvPath::kIm2col;
}

namespace {
std::atomic<std::int64_t> min_work_per_thread{std::int64_t{1} << 16};
}  // namespace

void set_conv_min_work_per_thread(std::int64_t macs) {
  min_work_per_thread = std::max<std::int64_t>(1, macs);
}
std::int64_t conv_min_work_per_thread() { return min_work_per_thread; }

namespace conv_detail {

Workspace::Workspace(const Layout& layout, void* base, std::size_t bytes, std::int64_t units,
                     const char* op)
    : shared_(layout.shared), per_slot_(layout.per_slot) {
  const std::int64_t threads = get_num_threads();
  if (layout.bytes(1) == 0) {
    slots_ = slot_count(units, threads);
    return;
  }
  FRUGAL_CHECK(base != nullptr && bytes >= layout.bytes(1),
               std::string(op) + ": workspace of " + std::to_string(bytes) +
                   " bytes is too small; one thread needs " + std::to_string(layout.bytes(1)));
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  base_ = static_cast<char*>(base) + (kAlign - address % kAlign) % kAlign;
  std::int64_t fit = threads;
  if (per_slot_ > 0) fit = static_cast<std::int64_t>((bytes - kAlign - shared_) / per_slot_);
  slots_ = slot_count(units, std::min(threads, fit));
}

}  // namespace conv_detail

using namespace conv_detail;

template <class T>
std::size_t conv2d_forward_workspace_bytes(const Conv2dParams& p, int threads) {
  validate_conv2d(p);
  switch (conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_forward_layout<T>(p).bytes(slot_count(depthwise_plane_units(p), threads));
    case ConvPath::kPointwise:
      if constexpr (kNative<T>) return pointwise_forward_layout<T>(p).bytes(1);
      return 0;
    case ConvPath::kShifted:
      return shifted_forward_layout<T>(p).bytes(slot_count(shifted_units(p), threads));
    case ConvPath::kIm2col:
      break;
  }
  return im2col_forward_layout<T>(p).bytes(slot_count(im2col_units(p), threads));
}

template <class T>
std::size_t conv2d_backward_input_workspace_bytes(const Conv2dParams& p, int threads) {
  validate_conv2d(p);
  switch (conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_backward_input_layout<T>(p).bytes(
          slot_count(depthwise_plane_units(p), threads));
    case ConvPath::kPointwise:
      return 0;
    case ConvPath::kShifted:
      return shifted_backward_input_layout<T>(p).bytes(slot_count(shifted_units(p), threads));
    case ConvPath::kIm2col:
      break;
  }
  return im2col_backward_input_layout<T>(p).bytes(slot_count(im2col_units(p), threads));
}

template <class T>
std::size_t conv2d_backward_weight_workspace_bytes(const Conv2dParams& p, int threads) {
  validate_conv2d(p);
  switch (conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_backward_weight_layout<T>(p).bytes(
          slot_count(depthwise_weight_units(p), threads));
    case ConvPath::kPointwise:
      if constexpr (kNative<T>)
        return pointwise_backward_weight_layout<T>(p).bytes(
            slot_count(pointwise_weight_units(p), threads));
      break;
    case ConvPath::kShifted:
      return shifted_backward_weight_layout<T>(p).bytes(slot_count(shifted_units(p), threads));
    case ConvPath::kIm2col:
      break;
  }
  return im2col_backward_weight_layout<T>(p).bytes(slot_count(im2col_units(p), threads));
}

template <class T>
void conv2d_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                    T* output, void* workspace, std::size_t workspace_bytes) {
  validate_conv2d(p);
  if (p.N == 0) return;
  switch (conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_forward(p, input, weight, bias, output, workspace, workspace_bytes);
    case ConvPath::kPointwise:
      if constexpr (kNative<T>)
        return pointwise_forward(p, input, weight, bias, output, workspace, workspace_bytes);
      break;
    case ConvPath::kShifted:
      return shifted_forward(p, input, weight, bias, output, workspace, workspace_bytes);
    case ConvPath::kIm2col:
      return im2col_forward(p, input, weight, bias, output, workspace, workspace_bytes);
  }
}

template <class T>
void conv2d_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                           T* grad_input, void* workspace, std::size_t workspace_bytes) {
  validate_conv2d(p);
  if (p.N == 0) return;
  switch (conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_backward_input(p, grad_output, weight, grad_input, workspace,
                                      workspace_bytes);
    case ConvPath::kPointwise:
      if constexpr (kNative<T>) return pointwise_backward_input(p, grad_output, weight, grad_input);
      break;
    case ConvPath::kShifted:
      return shifted_backward_input(p, grad_output, weight, grad_input, workspace, workspace_bytes);
    case ConvPath::kIm2col:
      return im2col_backward_input(p, grad_output, weight, grad_input, workspace, workspace_bytes);
  }
}

template <class T>
void conv2d_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                            T* grad_weight, T* grad_bias, void* workspace,
                            std::size_t workspace_bytes) {
  validate_conv2d(p);
  switch (conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_backward_weight(p, grad_output, input, grad_weight, grad_bias, workspace,
                                       workspace_bytes);
    case ConvPath::kPointwise:
      if constexpr (kNative<T>)
        return pointwise_backward_weight(p, grad_output, input, grad_weight, grad_bias, workspace,
                                         workspace_bytes);
      break;
    case ConvPath::kShifted:
      return shifted_backward_weight(p, grad_output, input, grad_weight, grad_bias, workspace,
                                     workspace_bytes);
    case ConvPath::kIm2col:
      return im2col_backward_weight(p, grad_output, input, grad_weight, grad_bias, workspace,
                                    workspace_bytes);
  }
}

#define FRUGAL_INSTANTIATE_CONV(T)                                                                \
  template ConvPath conv2d_path<T>(const Conv2dParams&);                                          \
  template std::size_t conv2d_forward_workspace_bytes<T>(const Conv2dParams&, int);               \
  template std::size_t conv2d_backward_input_workspace_bytes<T>(const Conv2dParams&, int);        \
  template std::size_t conv2d_backward_weight_workspace_bytes<T>(const Conv2dParams&, int);       \
  template void conv2d_forward<T>(const Conv2dParams&, const T*, const T*, const T*, T*, void*,   \
                                  std::size_t);                                                   \
  template void conv2d_backward_input<T>(const Conv2dParams&, const T*, const T*, T*, void*,      \
                                         std::size_t);                                            \
  template void conv2d_backward_weight<T>(const Conv2dParams&, const T*, const T*, T*, T*, void*, \
                                          std::size_t);
FRUGAL_INSTANTIATE_CONV(float)
FRUGAL_INSTANTIATE_CONV(double)
FRUGAL_INSTANTIATE_CONV(Half)
FRUGAL_INSTANTIATE_CONV(BFloat16)
#undef FRUGAL_INSTANTIATE_CONV

}  // namespace frugal::kernels::cpu
