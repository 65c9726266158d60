// CUDA pooling kernels: forward one thread per output element, backward one thread per input
// element gathering from the windows that contain it (deterministic, no atomics). Window bounds,
// tie and NaN rules and summation order follow kernels/cpu/pool.cpp so results match it.
#include "kernels/cuda/pool.h"

#include <cmath>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "kernels/cuda/common.cuh"
#include "kernels/instantiations.h"

namespace frugal::kernels::cuda {
namespace {

// Geometry passed by value to the kernels (Pool2dParams' out_h/out_w are host functions).
struct Geom {
  std::int64_t planes, H, W, OH, OW, kH, kW, sh, sw, ph, pw, dh, dw;
  bool include_pad;
};

Geom geom(const Pool2dParams& p) {
  return {p.N * p.C, p.H,          p.W,          p.out_h(),          p.out_w(),
          p.kH,      p.kW,         p.stride_h,   p.stride_w,         p.pad_h,
          p.pad_w,   p.dilation_h, p.dilation_w, p.count_include_pad};
}

// v rounded to T's precision (identity for float and double): the CPU's in-place accumulation
// rounds to T after every term.
template <class T>
__device__ __forceinline__ compute_t<T> round_to(compute_t<T> v) {
  if constexpr (std::is_same_v<T, Half>)
    return __half2float(__float2half_rn(v));
  else if constexpr (std::is_same_v<T, BFloat16>)
    return __bfloat162float(__float2bfloat16_rn(v));
  else
    return v;
}

__device__ __forceinline__ std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

template <class T, class Index>
__global__ void max_forward_kernel(Geom g, const T* input, T* output, Index* indices) {
  using A = compute_t<T>;
  constexpr bool kCompact = std::is_same_v<Index, std::uint8_t>;
  const std::int64_t total = g.planes * g.OH * g.OW;
  FRUGAL_CUDA_KERNEL_LOOP(i, total) {
    const std::int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, u = i / (g.OW * g.OH);
    const T* in = input + u * g.H * g.W;
    const std::int64_t hs = oh * g.sh - g.ph, ws = ow * g.sw - g.pw;
    std::int64_t h0 = hs, w0 = ws;
    const std::int64_t h1 = min(hs + (g.kH - 1) * g.dh + 1, g.H);
    const std::int64_t w1 = min(ws + (g.kW - 1) * g.dw + 1, g.W);
    while (h0 < 0) h0 += g.dh;
    while (w0 < 0) w0 += g.dw;
    std::int64_t best_h = h0, best_w = w0;
    A best = static_cast<A>(-INFINITY);
    for (std::int64_t h = h0; h < h1; h += g.dh)
      for (std::int64_t w = w0; w < w1; w += g.dw) {
        const A v = load(in + h * g.W + w);
        const bool take = v > best || v != v;  // the first maximum; a NaN wins (PyTorch)
        best = take ? v : best;
        best_h = take ? h : best_h;
        best_w = take ? w : best_w;
      }
    store(output + i, best);
    if (indices) {
      if constexpr (kCompact)
        indices[i] = static_cast<Index>((best_h - hs) / g.dh * g.kW + (best_w - ws) / g.dw);
      else
        indices[i] = best_h * g.W + best_w;
    }
  }
}

// One thread per input element: the windows holding row h are oh = (h + ph - kh dh) / sh for
// the kh where that divides exactly; kh descending visits oh ascending, the CPU's scatter order.
// The sum is rounded to T after each term, as the CPU's in-place accumulation does.
template <class T, class Index>
__global__ void max_backward_kernel(Geom g, const T* grad_output, const Index* indices,
                                    T* grad_input) {
  using A = compute_t<T>;
  constexpr bool kCompact = std::is_same_v<Index, std::uint8_t>;
  const std::int64_t total = g.planes * g.H * g.W;
  FRUGAL_CUDA_KERNEL_LOOP(i, total) {
    const std::int64_t w = i % g.W, h = (i / g.W) % g.H, u = i / (g.W * g.H);
    const T* gout = grad_output + u * g.OH * g.OW;
    const Index* idx = indices + u * g.OH * g.OW;
    A sum = 0;
    for (std::int64_t kh = g.kH - 1; kh >= 0; --kh) {
      const std::int64_t th = h + g.ph - kh * g.dh;
      if (th < 0 || th % g.sh != 0 || th / g.sh >= g.OH) continue;
      const std::int64_t oh = th / g.sh;
      for (std::int64_t kw = g.kW - 1; kw >= 0; --kw) {
        const std::int64_t tw = w + g.pw - kw * g.dw;
        if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.OW) continue;
        const std::int64_t o = oh * g.OW + tw / g.sw;
        bool mine;
        if constexpr (kCompact)
          mine = static_cast<std::int64_t>(idx[o]) == kh * g.kW + kw;
        else
          mine = idx[o] == h * g.W + w;
        if (mine) sum = round_to<T>(sum + load(gout + o));
      }
    }
    store(grad_input + i, sum);
  }
}

// PyTorch's average window along one dim (see the CPU's avg_window).
struct AvgWindow {
  std::int64_t start, end, count;
};
__device__ __forceinline__ AvgWindow avg_window(std::int64_t o, std::int64_t size, std::int64_t k,
                                                std::int64_t stride, std::int64_t pad,
                                                bool include_pad) {
  const std::int64_t s = o * stride - pad;
  const std::int64_t e = min(s + k, size + pad);
  AvgWindow w{max(s, std::int64_t{0}), min(e, size), e - s};
  if (!include_pad) w.count = max(w.end - w.start, std::int64_t{0});
  return w;
}

template <class T>
__global__ void avg_forward_kernel(Geom g, const T* input, T* output) {
  using A = compute_t<T>;
  const std::int64_t total = g.planes * g.OH * g.OW;
  FRUGAL_CUDA_KERNEL_LOOP(i, total) {
    const std::int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, u = i / (g.OW * g.OH);
    const T* in = input + u * g.H * g.W;
    const AvgWindow wh = avg_window(oh, g.H, g.kH, g.sh, g.ph, g.include_pad);
    const AvgWindow ww = avg_window(ow, g.W, g.kW, g.sw, g.pw, g.include_pad);
    if (wh.start >= wh.end || ww.start >= ww.end) {
      store(output + i, A(0));
      continue;
    }
    A sum = 0;
    for (std::int64_t h = wh.start; h < wh.end; ++h)
      for (std::int64_t w = ww.start; w < ww.end; ++w) sum += load(in + h * g.W + w);
    store(output + i, sum / static_cast<A>(wh.count * ww.count));
  }
}

template <class T>
__global__ void avg_backward_kernel(Geom g, const T* grad_output, T* grad_input) {
  using A = compute_t<T>;
  const std::int64_t total = g.planes * g.H * g.W;
  FRUGAL_CUDA_KERNEL_LOOP(i, total) {
    const std::int64_t w = i % g.W, h = (i / g.W) % g.H, u = i / (g.W * g.H);
    const T* gout = grad_output + u * g.OH * g.OW;
    // Windows oh with oh*s - pad <= h < oh*s - pad + k.
    const std::int64_t oh0 = max(std::int64_t{0}, ceil_div(h + g.ph - g.kH + 1, g.sh));
    const std::int64_t oh1 = min(g.OH, (h + g.ph) / g.sh + 1);
    const std::int64_t ow0 = max(std::int64_t{0}, ceil_div(w + g.pw - g.kW + 1, g.sw));
    const std::int64_t ow1 = min(g.OW, (w + g.pw) / g.sw + 1);
    A sum = 0;
    for (std::int64_t oh = oh0; oh < oh1; ++oh) {
      const std::int64_t ch = avg_window(oh, g.H, g.kH, g.sh, g.ph, g.include_pad).count;
      for (std::int64_t ow = ow0; ow < ow1; ++ow) {
        const std::int64_t cw = avg_window(ow, g.W, g.kW, g.sw, g.pw, g.include_pad).count;
        sum += load(gout + oh * g.OW + ow) / static_cast<A>(ch * cw);
      }
    }
    store(grad_input + i, sum);
  }
}

__device__ __forceinline__ std::int64_t adaptive_start(std::int64_t o, std::int64_t in,
                                                       std::int64_t out) {
  return o * in / out;
}
__device__ __forceinline__ std::int64_t adaptive_end(std::int64_t o, std::int64_t in,
                                                     std::int64_t out) {
  return ((o + 1) * in + out - 1) / out;
}

template <class T>
__global__ void adaptive_forward_kernel(AdaptivePool2dParams p, const T* input, T* output) {
  using A = compute_t<T>;
  const std::int64_t OH = p.out_h, OW = p.out_w, total = p.N * p.C * OH * OW;
  FRUGAL_CUDA_KERNEL_LOOP(i, total) {
    const std::int64_t ow = i % OW, oh = (i / OW) % OH, u = i / (OW * OH);
    const T* in = input + u * p.H * p.W;
    const std::int64_t h0 = adaptive_start(oh, p.H, OH), h1 = adaptive_end(oh, p.H, OH);
    const std::int64_t w0 = adaptive_start(ow, p.W, OW), w1 = adaptive_end(ow, p.W, OW);
    A sum = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w) sum += load(in + h * p.W + w);
    store(output + i, sum / static_cast<A>((h1 - h0) * (w1 - w0)));
  }
}

template <class T>
__global__ void adaptive_backward_kernel(AdaptivePool2dParams p, const T* grad_output,
                                         T* grad_input) {
  using A = compute_t<T>;
  const std::int64_t OH = p.out_h, OW = p.out_w, total = p.N * p.C * p.H * p.W;
  FRUGAL_CUDA_KERNEL_LOOP(i, total) {
    const std::int64_t w = i % p.W, h = (i / p.W) % p.H, u = i / (p.W * p.H);
    const T* gout = grad_output + u * OH * OW;
    // The windows holding input row h: floor(h*OH/H) <= oh < ceil((h+1)*OH/H).
    const std::int64_t oh_end = min(OH, ((h + 1) * OH + p.H - 1) / p.H);
    const std::int64_t ow_end = min(OW, ((w + 1) * OW + p.W - 1) / p.W);
    A sum = 0;
    for (std::int64_t oh = h * OH / p.H; oh < oh_end; ++oh) {
      const std::int64_t h0 = adaptive_start(oh, p.H, OH), h1 = adaptive_end(oh, p.H, OH);
      if (h < h0 || h >= h1) continue;
      for (std::int64_t ow = w * OW / p.W; ow < ow_end; ++ow) {
        const std::int64_t w0 = adaptive_start(ow, p.W, OW), w1 = adaptive_end(ow, p.W, OW);
        if (w < w0 || w >= w1) continue;
        sum += load(gout + oh * OW + ow) / static_cast<A>((h1 - h0) * (w1 - w0));
      }
    }
    store(grad_input + i, sum);
  }
}

void check_compact(const Pool2dParams& p) {
  FRUGAL_CHECK(p.kH * p.kW <= 256, "max_pool2d: a " + std::to_string(p.kH) + "x" +
                                       std::to_string(p.kW) +
                                       " window has more places than a one-byte index holds");
}

template <class T, class Index>
void max_forward(const Pool2dParams& p, const T* input, T* output, Index* indices) {
  validate_pool2d(p, false);
  const Geom g = geom(p);
  const std::int64_t n = g.planes * g.OH * g.OW;
  if (n == 0) return;
  max_forward_kernel<T, Index>
      <<<blocks_for(n), kBlockSize, 0, stream()>>>(g, input, output, indices);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T, class Index>
void max_backward(const Pool2dParams& p, const T* grad_output, const Index* indices,
                  T* grad_input) {
  validate_pool2d(p, false);
  const Geom g = geom(p);
  const std::int64_t n = g.planes * g.H * g.W;
  if (n == 0) return;
  max_backward_kernel<T, Index>
      <<<blocks_for(n), kBlockSize, 0, stream()>>>(g, grad_output, indices, grad_input);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <class T>
void max_pool2d_forward(const Pool2dParams& p, const T* input, T* output, std::int64_t* indices) {
  max_forward(p, input, output, indices);
}

template <class T>
void max_pool2d_backward(const Pool2dParams& p, const T* grad_output, const std::int64_t* indices,
                         T* grad_input) {
  max_backward(p, grad_output, indices, grad_input);
}

template <class T>
void max_pool2d_forward_compact(const Pool2dParams& p, const T* input, T* output,
                                std::uint8_t* window_index) {
  check_compact(p);
  max_forward(p, input, output, window_index);
}

template <class T>
void max_pool2d_backward_compact(const Pool2dParams& p, const T* grad_output,
                                 const std::uint8_t* window_index, T* grad_input) {
  max_backward(p, grad_output, window_index, grad_input);
}

template <class T>
void avg_pool2d_forward(const Pool2dParams& p, const T* input, T* output) {
  validate_pool2d(p, true);
  const Geom g = geom(p);
  const std::int64_t n = g.planes * g.OH * g.OW;
  if (n == 0) return;
  avg_forward_kernel<T><<<blocks_for(n), kBlockSize, 0, stream()>>>(g, input, output);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void avg_pool2d_backward(const Pool2dParams& p, const T* grad_output, T* grad_input) {
  validate_pool2d(p, true);
  const Geom g = geom(p);
  const std::int64_t n = g.planes * g.H * g.W;
  if (n == 0) return;
  avg_backward_kernel<T><<<blocks_for(n), kBlockSize, 0, stream()>>>(g, grad_output, grad_input);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void adaptive_avg_pool2d_forward(const AdaptivePool2dParams& p, const T* input, T* output) {
  validate_adaptive_pool2d(p);
  const std::int64_t n = p.N * p.C * p.out_h * p.out_w;
  if (n == 0) return;
  adaptive_forward_kernel<T><<<blocks_for(n), kBlockSize, 0, stream()>>>(p, input, output);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void adaptive_avg_pool2d_backward(const AdaptivePool2dParams& p, const T* grad_output,
                                  T* grad_input) {
  validate_adaptive_pool2d(p);
  const std::int64_t n = p.N * p.C * p.H * p.W;
  if (n == 0) return;
  adaptive_backward_kernel<T>
      <<<blocks_for(n), kBlockSize, 0, stream()>>>(p, grad_output, grad_input);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_POOL)

}  // namespace frugal::kernels::cuda
