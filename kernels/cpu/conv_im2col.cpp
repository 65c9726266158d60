// The general convolution path: per sample and group, im2col over a tile of output rows, then
// one gemm; grad input is gemm + col2im; grad weight sums per-thread gemms, then reduces.
#include "kernels/cpu/isa_variant.h"

#include <cstring>
#include <type_traits>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/gemm.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail {

namespace {

template <class T>
constexpr bool kWiden = !std::is_same_v<T, compute_t<T>>;

// The column buffer of a tile is sized to stay in the L2 cache, where the gemm that follows
// packs it from; whole-sample columns (9x the input) would stream through memory twice.
constexpr std::int64_t kColTileBytes = 384 * 1024;

struct Geometry {
  std::int64_t G, Cg, Og, Kg, OH, OW, HWi, HWo, tile_rows, tile;

  Geometry(const Conv2dParams& p, std::size_t acc_bytes) {
    G = p.groups;
    Cg = p.C / G;
    Og = p.O / G;
    Kg = Cg * p.kH * p.kW;
    OH = p.out_h();
    OW = p.out_w();
    HWi = p.H * p.W;
    HWo = OH * OW;
    const auto row_bytes = static_cast<std::int64_t>(acc_bytes) * Kg * OW;
    const std::int64_t rows = std::clamp<std::int64_t>(kColTileBytes / row_bytes, 1, OH);
    const std::int64_t tiles = (OH + rows - 1) / rows;
    tile_rows = (OH + tiles - 1) / tiles;  // equal tiles rather than a small last one
    tile = tile_rows * OW;
  }
};

// Output columns ow whose input column ow*stride - pad + offset lies inside [0, size).
struct Span {
  std::int64_t lo, hi;
};
Span valid_span(std::int64_t size, std::int64_t out, std::int64_t stride, std::int64_t shift) {
  // shift = offset - pad; need 0 <= ow*stride + shift <= size - 1.
  const std::int64_t lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  const std::int64_t last = size - 1 - shift;
  const std::int64_t hi = last < 0 ? 0 : std::min(out, last / stride + 1);
  return {std::min(lo, hi), hi};
}

// col[(c, kh, kw)][(oh - oh0, ow)] = input[c][oh*sh - ph + kh*dh][ow*sw - pw + kw*dw], or 0.
template <class T, class A>
void im2col(const Conv2dParams& p, const Geometry& g, const T* in, std::int64_t oh0,
            std::int64_t oh1, A* col) {
  const std::int64_t P = (oh1 - oh0) * g.OW, OW = g.OW;
  for (std::int64_t c = 0; c < g.Cg; ++c) {
    for (std::int64_t kh = 0; kh < p.kH; ++kh) {
      for (std::int64_t kw = 0; kw < p.kW; ++kw) {
        A* row = col + ((c * p.kH + kh) * p.kW + kw) * P;
        const std::int64_t shift = kw * p.dilation_w - p.pad_w;
        const Span s = valid_span(p.W, OW, p.stride_w, shift);
        for (std::int64_t oh = oh0; oh < oh1; ++oh) {
          A* dst = row + (oh - oh0) * OW;
          const std::int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
          if (ih < 0 || ih >= p.H) {
            std::fill(dst, dst + OW, A(0));
            continue;
          }
          const T* src = in + c * g.HWi + ih * p.W;
          std::fill(dst, dst + s.lo, A(0));
          if (p.stride_w == 1) {
            for (std::int64_t ow = s.lo; ow < s.hi; ++ow) dst[ow] = static_cast<A>(src[ow + shift]);
          } else {
            for (std::int64_t ow = s.lo; ow < s.hi; ++ow)
              dst[ow] = static_cast<A>(src[ow * p.stride_w + shift]);
          }
          std::fill(dst + s.hi, dst + OW, A(0));
        }
      }
    }
  }
}

// The adjoint of im2col: adds each column entry into the input position it was read from.
template <class A>
void col2im_add(const Conv2dParams& p, const Geometry& g, const A* col, std::int64_t oh0,
                std::int64_t oh1, A* in) {
  const std::int64_t P = (oh1 - oh0) * g.OW, OW = g.OW;
  for (std::int64_t c = 0; c < g.Cg; ++c) {
    for (std::int64_t kh = 0; kh < p.kH; ++kh) {
      for (std::int64_t kw = 0; kw < p.kW; ++kw) {
        const A* row = col + ((c * p.kH + kh) * p.kW + kw) * P;
        const std::int64_t shift = kw * p.dilation_w - p.pad_w;
        const Span s = valid_span(p.W, OW, p.stride_w, shift);
        for (std::int64_t oh = oh0; oh < oh1; ++oh) {
          const std::int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
          if (ih < 0 || ih >= p.H) continue;
          const A* src = row + (oh - oh0) * OW;
          A* dst = in + c * g.HWi + ih * p.W;
          if (p.stride_w == 1) {
            for (std::int64_t ow = s.lo; ow < s.hi; ++ow) dst[ow + shift] += src[ow];
          } else {
            for (std::int64_t ow = s.lo; ow < s.hi; ++ow) dst[ow * p.stride_w + shift] += src[ow];
          }
        }
      }
    }
  }
}

// Rows [oh0, oh1) of `rows` channel planes (pitch HWo) as a contiguous A matrix (pitch P).
template <class T, class A>
void widen_tile(const T* src, std::int64_t rows, std::int64_t HWo, std::int64_t P, A* dst) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < P; ++j) dst[r * P + j] = static_cast<A>(src[r * HWo + j]);
}

// Weights as compute type: the tensor itself for float/double, a widened copy otherwise.
template <class T>
const compute_t<T>* weights_as_acc(const Conv2dParams& p, const Geometry& g, const T* weight,
                                   const Workspace& ws, std::size_t at) {
  using A = compute_t<T>;
  if constexpr (kWiden<T>) {
    A* w = ws.shared<A>(at);
    for (std::int64_t i = 0; i < p.O * g.Kg; ++i) w[i] = static_cast<A>(weight[i]);
    return w;
  } else {
    return weight;
  }
}

struct Plan {
  Layout layout;
  std::size_t weight = 0, col = 0, tile = 0, plane = 0, acc = 0, bias = 0;
};

template <class T>
Plan forward_plan(const Conv2dParams& p) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  Plan plan;
  if (kWiden<T>) plan.weight = plan.layout.add_shared<A>(p.O * g.Kg);
  plan.col = plan.layout.add_slot<A>(g.Kg * g.tile);
  if (kWiden<T>) plan.tile = plan.layout.add_slot<A>(g.Og * g.tile);
  return plan;
}

template <class T>
Plan backward_input_plan(const Conv2dParams& p) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  Plan plan;
  if (kWiden<T>) plan.weight = plan.layout.add_shared<A>(p.O * g.Kg);
  plan.col = plan.layout.add_slot<A>(g.Kg * g.tile);
  if (kWiden<T>) {
    plan.tile = plan.layout.add_slot<A>(g.Og * g.tile);
    plan.plane = plan.layout.add_slot<A>(g.Cg * g.HWi);
  }
  return plan;
}

template <class T>
Plan backward_weight_plan(const Conv2dParams& p) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  Plan plan;
  plan.col = plan.layout.add_slot<A>(g.Kg * g.tile);
  if (kWiden<T>) plan.tile = plan.layout.add_slot<A>(g.Og * g.tile);
  plan.acc = plan.layout.add_slot<A>(p.O * g.Kg);
  plan.bias = plan.layout.add_slot<double>(p.O);
  return plan;
}

}  // namespace

template <class T>
Layout im2col_forward_layout(const Conv2dParams& p) {
  return forward_plan<T>(p).layout;
}
template <class T>
Layout im2col_backward_input_layout(const Conv2dParams& p) {
  return backward_input_plan<T>(p).layout;
}
template <class T>
Layout im2col_backward_weight_layout(const Conv2dParams& p) {
  return backward_weight_plan<T>(p).layout;
}

template <class T>
void im2col_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                    T* output, void* wsp, std::size_t bytes) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  const Plan plan = forward_plan<T>(p);
  const Workspace ws(plan.layout, wsp, bytes, im2col_units(p), "conv2d_forward");
  const A* w = weights_as_acc(p, g, weight, ws, plan.weight);
  for_slots(p.N, ws.slots(), [&](std::int64_t s, std::int64_t n0, std::int64_t n1) {
    A* col = ws.slot<A>(s, plan.col);
    for (std::int64_t n = n0; n < n1; ++n) {
      for (std::int64_t gi = 0; gi < g.G; ++gi) {
        const T* in = input + (n * p.C + gi * g.Cg) * g.HWi;
        T* out = output + (n * p.O + gi * g.Og) * g.HWo;
        for (std::int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
          const std::int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows), P = (oh1 - oh0) * g.OW;
          im2col(p, g, in, oh0, oh1, col);
          A* dst;
          std::int64_t ldd;
          if constexpr (kWiden<T>) {
            dst = ws.slot<A>(s, plan.tile);
            ldd = P;
          } else {
            dst = out + oh0 * g.OW;
            ldd = g.HWo;
          }
          // The bias goes in first and the gemm adds onto it, saving a pass over the output.
          A beta = 0;
          if (bias) {
            for (std::int64_t o = 0; o < g.Og; ++o)
              std::fill(dst + o * ldd, dst + o * ldd + P, static_cast<A>(bias[gi * g.Og + o]));
            beta = 1;
          }
          gemm<A>(false, false, g.Og, P, g.Kg, A(1), w + gi * g.Og * g.Kg, g.Kg, col, P, beta, dst,
                  ldd);
          if constexpr (kWiden<T>) {
            for (std::int64_t o = 0; o < g.Og; ++o)
              for (std::int64_t j = 0; j < P; ++j)
                out[o * g.HWo + oh0 * g.OW + j] = static_cast<T>(dst[o * P + j]);
          }
        }
      }
    }
  });
}

template <class T>
void im2col_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                           T* grad_input, void* wsp, std::size_t bytes) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  const Plan plan = backward_input_plan<T>(p);
  const Workspace ws(plan.layout, wsp, bytes, im2col_units(p), "conv2d_backward_input");
  const A* w = weights_as_acc(p, g, weight, ws, plan.weight);
  for_slots(p.N, ws.slots(), [&](std::int64_t s, std::int64_t n0, std::int64_t n1) {
    A* col = ws.slot<A>(s, plan.col);
    for (std::int64_t n = n0; n < n1; ++n) {
      for (std::int64_t gi = 0; gi < g.G; ++gi) {
        const T* gout = grad_output + (n * p.O + gi * g.Og) * g.HWo;
        T* gin_t = grad_input + (n * p.C + gi * g.Cg) * g.HWi;
        A* gin;
        if constexpr (kWiden<T>) {
          gin = ws.slot<A>(s, plan.plane);
        } else {
          gin = gin_t;
        }
        std::fill(gin, gin + g.Cg * g.HWi, A(0));
        for (std::int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
          const std::int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows), P = (oh1 - oh0) * g.OW;
          const A* b;
          std::int64_t ldb;
          if constexpr (kWiden<T>) {
            A* tile = ws.slot<A>(s, plan.tile);
            widen_tile(gout + oh0 * g.OW, g.Og, g.HWo, P, tile);
            b = tile;
            ldb = P;
          } else {
            b = gout + oh0 * g.OW;
            ldb = g.HWo;
          }
          gemm<A>(true, false, g.Kg, P, g.Og, A(1), w + gi * g.Og * g.Kg, g.Kg, b, ldb, A(0), col,
                  P);
          col2im_add(p, g, col, oh0, oh1, gin);
        }
        if constexpr (kWiden<T>) {
          for (std::int64_t i = 0; i < g.Cg * g.HWi; ++i) gin_t[i] = static_cast<T>(gin[i]);
        }
      }
    }
  });
}

template <class T>
void im2col_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                            T* grad_weight, T* grad_bias, void* wsp, std::size_t bytes) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  const Plan plan = backward_weight_plan<T>(p);
  const Workspace ws(plan.layout, wsp, bytes, im2col_units(p), "conv2d_backward_weight");
  for_slots(p.N, ws.slots(), [&](std::int64_t s, std::int64_t n0, std::int64_t n1) {
    A* col = ws.slot<A>(s, plan.col);
    A* acc = ws.slot<A>(s, plan.acc);
    double* bacc = ws.slot<double>(s, plan.bias);
    std::fill(acc, acc + p.O * g.Kg, A(0));
    std::fill(bacc, bacc + p.O, 0.0);
    for (std::int64_t n = n0; n < n1; ++n) {
      for (std::int64_t gi = 0; gi < g.G; ++gi) {
        const T* in = input + (n * p.C + gi * g.Cg) * g.HWi;
        const T* gout = grad_output + (n * p.O + gi * g.Og) * g.HWo;
        for (std::int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
          const std::int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows), P = (oh1 - oh0) * g.OW;
          im2col(p, g, in, oh0, oh1, col);
          const A* a;
          std::int64_t lda;
          if constexpr (kWiden<T>) {
            A* tile = ws.slot<A>(s, plan.tile);
            widen_tile(gout + oh0 * g.OW, g.Og, g.HWo, P, tile);
            a = tile;
            lda = P;
          } else {
            a = gout + oh0 * g.OW;
            lda = g.HWo;
          }
          gemm<A>(false, true, g.Og, g.Kg, P, A(1), a, lda, col, P, A(1), acc + gi * g.Og * g.Kg,
                  g.Kg);
          if (grad_bias)
            for (std::int64_t o = 0; o < g.Og; ++o) bacc[gi * g.Og + o] += run_sum(a + o * lda, P);
        }
      }
    }
  });
  sum_slots<A>(ws, plan.acc, p.O * g.Kg, grad_weight);
  if (grad_bias) sum_slots<double>(ws, plan.bias, p.O, grad_bias);
}

#define FRUGAL_INSTANTIATE_IM2COL(T) FRUGAL_INSTANTIATE_CONV_PATH(im2col, T)
FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_IM2COL)
#undef FRUGAL_INSTANTIATE_IM2COL

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail
