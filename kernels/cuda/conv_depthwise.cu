// Depthwise convolution on CUDA as three direct kernels: forward one thread per output, grad
// input one thread per input gathering from the windows that hold it, grad weight one block per
// weight (and per bias) summing its products over the batch in double. No atomics: repeatable.
#include "kernels/cuda/conv_depthwise.h"

#include <string>

#include "common/error.h"
#include "kernels/cuda/common.cuh"

namespace frugal::kernels::cuda {
namespace {

// Geometry by value (Conv2dParams' out_h/out_w are host functions).
struct Geom {
  std::int64_t N, C, H, W, OH, OW, kH, kW, sh, sw, ph, pw, dh, dw;
};

Geom geom(const Conv2dParams& p) {
  return {p.N,  p.C,        p.H,        p.W,     p.out_h(), p.out_w(),    p.kH,
          p.kW, p.stride_h, p.stride_w, p.pad_h, p.pad_w,   p.dilation_h, p.dilation_w};
}

void check_depthwise(const Conv2dParams& p, const char* what) {
  validate_conv2d(p);
  FRUGAL_CHECK(is_depthwise(p),
               std::string(what) + ": not a depthwise convolution (C=" + std::to_string(p.C) +
                   ", O=" + std::to_string(p.O) + ", groups=" + std::to_string(p.groups) +
                   "); it needs groups == C == O");
}

template <class T>
__global__ void forward_kernel(Geom g, const T* input, const T* weight, const T* bias, T* output) {
  using A = compute_t<T>;
  const std::int64_t total = g.N * g.C * g.OH * g.OW;
  FRUGAL_CUDA_KERNEL_LOOP(i, total) {
    const std::int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, plane = i / (g.OW * g.OH);
    const std::int64_t c = plane % g.C;
    const T* in = input + plane * g.H * g.W;
    const T* w = weight + c * g.kH * g.kW;
    A sum = bias ? load(bias + c) : A(0);
    for (std::int64_t kh = 0; kh < g.kH; ++kh) {
      const std::int64_t h = oh * g.sh - g.ph + kh * g.dh;
      if (h < 0 || h >= g.H) continue;
      for (std::int64_t kw = 0; kw < g.kW; ++kw) {
        const std::int64_t x = ow * g.sw - g.pw + kw * g.dw;
        if (x < 0 || x >= g.W) continue;
        sum += load(in + h * g.W + x) * load(w + kh * g.kW + kw);
      }
    }
    store(output + i, sum);
  }
}

// Input row h is read by output row oh through kernel row kh when oh * sh = h + ph - kh * dh.
template <class T>
__global__ void backward_input_kernel(Geom g, const T* grad_output, const T* weight,
                                      T* grad_input) {
  using A = compute_t<T>;
  const std::int64_t total = g.N * g.C * g.H * g.W;
  FRUGAL_CUDA_KERNEL_LOOP(i, total) {
    const std::int64_t x = i % g.W, h = (i / g.W) % g.H, plane = i / (g.W * g.H);
    const std::int64_t c = plane % g.C;
    const T* go = grad_output + plane * g.OH * g.OW;
    const T* w = weight + c * g.kH * g.kW;
    A sum = A(0);
    for (std::int64_t kh = 0; kh < g.kH; ++kh) {
      const std::int64_t th = h + g.ph - kh * g.dh;
      if (th < 0 || th % g.sh != 0) continue;
      const std::int64_t oh = th / g.sh;
      if (oh >= g.OH) continue;
      for (std::int64_t kw = 0; kw < g.kW; ++kw) {
        const std::int64_t tw = x + g.pw - kw * g.dw;
        if (tw < 0 || tw % g.sw != 0) continue;
        const std::int64_t ow = tw / g.sw;
        if (ow >= g.OW) continue;
        sum += load(go + oh * g.OW + ow) * load(w + kh * g.kW + kw);
      }
    }
    store(grad_input + i, sum);
  }
}

// Block b < C * kH * kW sums grad_output * input for weight b over (n, oh, ow); block
// C * kH * kW + c sums grad_output of channel c (the bias gradient). Double accumulation.
template <class T>
__global__ void backward_weight_kernel(Geom g, const T* grad_output, const T* input, T* grad_weight,
                                       T* grad_bias) {
  const std::int64_t taps = g.kH * g.kW;
  const std::int64_t b = blockIdx.x;
  const bool is_bias = b >= g.C * taps;
  const std::int64_t c = is_bias ? b - g.C * taps : b / taps;
  const std::int64_t kh = is_bias ? 0 : (b % taps) / g.kW, kw = is_bias ? 0 : b % g.kW;
  const std::int64_t per_sample = g.OH * g.OW, total = g.N * per_sample;
  double sum = 0;
  for (std::int64_t j = threadIdx.x; j < total; j += blockDim.x) {
    const std::int64_t n = j / per_sample, o = j % per_sample;
    const std::int64_t plane = n * g.C + c;
    const double go = static_cast<double>(load(grad_output + plane * per_sample + o));
    if (is_bias) {
      sum += go;
      continue;
    }
    const std::int64_t oh = o / g.OW, ow = o % g.OW;
    const std::int64_t h = oh * g.sh - g.ph + kh * g.dh, x = ow * g.sw - g.pw + kw * g.dw;
    if (h < 0 || h >= g.H || x < 0 || x >= g.W) continue;
    sum += go * static_cast<double>(load(input + plane * g.H * g.W + h * g.W + x));
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) {
    using A = compute_t<T>;
    if (is_bias)
      store(grad_bias + c, static_cast<A>(sum));
    else
      store(grad_weight + b, static_cast<A>(sum));
  }
}

}  // namespace

bool is_depthwise(const Conv2dParams& p) { return p.groups == p.C && p.O == p.C; }

template <class T>
void depthwise_conv2d_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                              T* output) {
  check_depthwise(p, "depthwise_conv2d_forward");
  const Geom g = geom(p);
  const std::int64_t n = g.N * g.C * g.OH * g.OW;
  if (n == 0) return;
  forward_kernel<T><<<blocks_for(n), kBlockSize, 0, stream()>>>(g, input, weight, bias, output);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void depthwise_conv2d_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                                     T* grad_input) {
  check_depthwise(p, "depthwise_conv2d_backward_input");
  const Geom g = geom(p);
  const std::int64_t n = g.N * g.C * g.H * g.W;
  if (n == 0) return;
  backward_input_kernel<T>
      <<<blocks_for(n), kBlockSize, 0, stream()>>>(g, grad_output, weight, grad_input);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void depthwise_conv2d_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                                      T* grad_weight, T* grad_bias) {
  check_depthwise(p, "depthwise_conv2d_backward_weight");
  const Geom g = geom(p);
  const std::int64_t blocks = g.C * g.kH * g.kW + (grad_bias ? g.C : 0);
  FRUGAL_CHECK(blocks < (std::int64_t{1} << 31),
               "depthwise_conv2d_backward_weight: too many weights for one launch");
  // N == 0 still launches: every block writes its zero sum.
  backward_weight_kernel<T><<<static_cast<unsigned>(blocks), kBlockSize, 0, stream()>>>(
      g, grad_output, input, grad_weight, grad_bias);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

#define FRUGAL_INSTANTIATE_DEPTHWISE(T)                                                          \
  template void depthwise_conv2d_forward<T>(const Conv2dParams&, const T*, const T*, const T*,   \
                                            T*);                                                 \
  template void depthwise_conv2d_backward_input<T>(const Conv2dParams&, const T*, const T*, T*); \
  template void depthwise_conv2d_backward_weight<T>(const Conv2dParams&, const T*, const T*, T*, \
                                                    T*);
FRUGAL_INSTANTIATE_DEPTHWISE(float)
FRUGAL_INSTANTIATE_DEPTHWISE(double)
FRUGAL_INSTANTIATE_DEPTHWISE(Half)
FRUGAL_INSTANTIATE_DEPTHWISE(BFloat16)
#undef FRUGAL_INSTANTIATE_DEPTHWISE

}  // namespace frugal::kernels::cuda
