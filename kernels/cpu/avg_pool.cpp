// Average and adaptive average pooling, forward and backward, one input plane per task, with
// PyTorch's window bounds (padding counted or not, ceil mode) so results match it exactly.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

namespace {

// ceil(a / b) for b > 0 and any sign of a.
std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

}  // namespace

namespace {

// PyTorch's average window along one dim: [start, end) clipped to the input, and the
// divisor's share (the window clipped to the padded input, or to the input alone).
struct AvgWindow {
  std::int64_t start, end, count;
};
AvgWindow avg_window(std::int64_t o, std::int64_t size, std::int64_t k, std::int64_t stride,
                     std::int64_t pad, bool include_pad) {
  const std::int64_t s = o * stride - pad;
  const std::int64_t e = std::min(s + k, size + pad);
  AvgWindow w{std::max<std::int64_t>(s, 0), std::min(e, size), e - s};
  if (!include_pad) w.count = std::max<std::int64_t>(w.end - w.start, 0);
  return w;
}

}  // namespace

template <class T>
void avg_pool2d_forward(const Pool2dParams& p, const T* input, T* output) {
  using A = compute_t<T>;
  validate_pool2d(p, true);
  const std::int64_t OH = p.out_h(), OW = p.out_w(), HW = p.H * p.W;
  parallel_for(0, p.N * p.C, plane_grain(HW), [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const T* in = input + u * HW;
      T* out = output + u * OH * OW;
      for (std::int64_t oh = 0; oh < OH; ++oh) {
        const AvgWindow wh = avg_window(oh, p.H, p.kH, p.stride_h, p.pad_h, p.count_include_pad);
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const AvgWindow ww = avg_window(ow, p.W, p.kW, p.stride_w, p.pad_w, p.count_include_pad);
          if (wh.start >= wh.end || ww.start >= ww.end) {
            out[oh * OW + ow] = T(0);
            continue;
          }
          A sum = 0;
          for (std::int64_t h = wh.start; h < wh.end; ++h)
            for (std::int64_t w = ww.start; w < ww.end; ++w) sum += static_cast<A>(in[h * p.W + w]);
          out[oh * OW + ow] = static_cast<T>(sum / static_cast<A>(wh.count * ww.count));
        }
      }
    }
  });
}

// Gathering (rather than scattering) writes each input gradient once, so overlapping windows
// need no zeroing pass and 16-bit types round once.
template <class T>
void avg_pool2d_backward(const Pool2dParams& p, const T* grad_output, T* grad_input) {
  using A = compute_t<T>;
  validate_pool2d(p, true);
  const std::int64_t OH = p.out_h(), OW = p.out_w(), HW = p.H * p.W;
  parallel_for(0, p.N * p.C, plane_grain(HW), [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const T* gout = grad_output + u * OH * OW;
      T* gin = grad_input + u * HW;
      for (std::int64_t h = 0; h < p.H; ++h) {
        // Windows oh with oh*s - pad <= h < oh*s - pad + k.
        const std::int64_t oh0 =
            std::max<std::int64_t>(0, ceil_div(h + p.pad_h - p.kH + 1, p.stride_h));
        const std::int64_t oh1 = std::min(OH, (h + p.pad_h) / p.stride_h + 1);
        for (std::int64_t w = 0; w < p.W; ++w) {
          const std::int64_t ow0 =
              std::max<std::int64_t>(0, ceil_div(w + p.pad_w - p.kW + 1, p.stride_w));
          const std::int64_t ow1 = std::min(OW, (w + p.pad_w) / p.stride_w + 1);
          A sum = 0;
          for (std::int64_t oh = oh0; oh < oh1; ++oh) {
            const std::int64_t ch =
                avg_window(oh, p.H, p.kH, p.stride_h, p.pad_h, p.count_include_pad).count;
            for (std::int64_t ow = ow0; ow < ow1; ++ow) {
              const std::int64_t cw =
                  avg_window(ow, p.W, p.kW, p.stride_w, p.pad_w, p.count_include_pad).count;
              sum += static_cast<A>(gout[oh * OW + ow]) / static_cast<A>(ch * cw);
            }
          }
          gin[h * p.W + w] = static_cast<T>(sum);
        }
      }
    }
  });
}

namespace {

std::int64_t adaptive_start(std::int64_t o, std::int64_t in, std::int64_t out) {
  return o * in / out;
}
std::int64_t adaptive_end(std::int64_t o, std::int64_t in, std::int64_t out) {
  return ((o + 1) * in + out - 1) / out;
}

}  // namespace

template <class T>
void adaptive_avg_pool2d_forward(const AdaptivePool2dParams& p, const T* input, T* output) {
  using A = compute_t<T>;
  validate_adaptive_pool2d(p);
  const std::int64_t OH = p.out_h, OW = p.out_w, HW = p.H * p.W;
  parallel_for(0, p.N * p.C, plane_grain(HW), [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const T* in = input + u * HW;
      T* out = output + u * OH * OW;
      for (std::int64_t oh = 0; oh < OH; ++oh) {
        const std::int64_t h0 = adaptive_start(oh, p.H, OH), h1 = adaptive_end(oh, p.H, OH);
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const std::int64_t w0 = adaptive_start(ow, p.W, OW), w1 = adaptive_end(ow, p.W, OW);
          A sum = 0;
          for (std::int64_t h = h0; h < h1; ++h)
            for (std::int64_t w = w0; w < w1; ++w) sum += static_cast<A>(in[h * p.W + w]);
          out[oh * OW + ow] = static_cast<T>(sum / static_cast<A>((h1 - h0) * (w1 - w0)));
        }
      }
    }
  });
}

template <class T>
void adaptive_avg_pool2d_backward(const AdaptivePool2dParams& p, const T* grad_output,
                                  T* grad_input) {
  using A = compute_t<T>;
  validate_adaptive_pool2d(p);
  const std::int64_t OH = p.out_h, OW = p.out_w, HW = p.H * p.W;
  // The windows holding input row h: floor(h*OH/H) <= oh < ceil((h+1)*OH/H).
  auto first = [](std::int64_t i, std::int64_t in, std::int64_t out) { return i * out / in; };
  auto last = [](std::int64_t i, std::int64_t in, std::int64_t out) {
    return std::min(out, ((i + 1) * out + in - 1) / in);
  };
  if (p.H % OH == 0 && p.W % OW == 0) {
    // The windows tile the input (global average pooling among them): each input element
    // gets its one window's gradient share, written row by row.
    const std::int64_t kh = p.H / OH, kw = p.W / OW, W = p.W;
    const A area = static_cast<A>(kh * kw);
    parallel_for(0, p.N * p.C, plane_grain(HW), [=](std::int64_t u0, std::int64_t u1) {
      for (std::int64_t u = u0; u < u1; ++u) {
        const T* gout = grad_output + u * OH * OW;
        T* gin = grad_input + u * HW;
        for (std::int64_t h = 0; h < OH * kh; ++h) {
          const T* g = gout + (h / kh) * OW;
          T* row = gin + h * W;
          for (std::int64_t ow = 0; ow < OW; ++ow) {
            const T share = static_cast<T>(static_cast<A>(g[ow]) / area);
            std::fill(row + ow * kw, row + (ow + 1) * kw, share);
          }
        }
      }
    });
    return;
  }
  parallel_for(0, p.N * p.C, plane_grain(HW), [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const T* gout = grad_output + u * OH * OW;
      T* gin = grad_input + u * HW;
      for (std::int64_t h = 0; h < p.H; ++h) {
        for (std::int64_t w = 0; w < p.W; ++w) {
          A sum = 0;
          for (std::int64_t oh = first(h, p.H, OH); oh < last(h, p.H, OH); ++oh) {
            const std::int64_t h0 = adaptive_start(oh, p.H, OH), h1 = adaptive_end(oh, p.H, OH);
            if (h < h0 || h >= h1) continue;
            for (std::int64_t ow = first(w, p.W, OW); ow < last(w, p.W, OW); ++ow) {
              const std::int64_t w0 = adaptive_start(ow, p.W, OW), w1 = adaptive_end(ow, p.W, OW);
              if (w < w0 || w >= w1) continue;
              sum += static_cast<A>(gout[oh * OW + ow]) / static_cast<A>((h1 - h0) * (w1 - w0));
            }
          }
          gin[h * p.W + w] = static_cast<T>(sum);
        }
      }
    }
  });
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_AVG_POOL)

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
