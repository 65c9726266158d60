// The stride-1 convolution path without im2col: on a zero-padded copy of each input sample,
// the kH*kW taps are kH*kW GEMMs of depth C/groups, each reading the padded planes at a shift.
// Output rows are computed at the padded width (the last kW-1 columns of each row are
// discarded), which makes every tap's operand a plain strided matrix: no column buffer, so
// the workspace is one padded sample instead of nine copies of it, and no per-row copying.
#include <cstring>
#include <type_traits>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/gemm.h"

namespace frugal::kernels::cpu::conv_detail {

namespace {

// Output tiles of this many bytes stay in the L2 cache between the taps' GEMMs.
constexpr std::int64_t kOutTileBytes = 256 * 1024;

struct Geometry {
  std::int64_t G, Cg, Og, taps, OH, OW, Hp, Wp, plane, slack, tile_rows;

  Geometry(const Conv2dParams& p, std::size_t acc_bytes) {
    G = p.groups;
    Cg = p.C / G;
    Og = p.O / G;
    taps = p.kH * p.kW;
    OH = p.out_h();
    OW = p.out_w();
    Hp = p.H + 2 * p.pad_h;
    Wp = p.W + 2 * p.pad_w;
    plane = Hp * Wp;
    // A tap reads up to dilation_w * (kW - 1) elements past the last plane (in discarded
    // columns of the last row), so the padded buffer carries that much zeroed slack.
    slack = p.dilation_w * (p.kW - 1);
    const auto row_bytes = static_cast<std::int64_t>(acc_bytes) * std::max(Og, Cg) * Wp;
    const std::int64_t rows = std::clamp<std::int64_t>(kOutTileBytes / row_bytes, 1, OH);
    const std::int64_t tiles = (OH + rows - 1) / rows;
    tile_rows = (OH + tiles - 1) / tiles;
  }
  std::int64_t padded_elems() const { return Cg * plane + slack; }
  // Where tap (kh, kw) starts reading for output row oh0.
  std::int64_t tap_offset(const Conv2dParams& p, std::int64_t tap, std::int64_t oh0) const {
    const std::int64_t kh = tap / p.kW, kw = tap % p.kW;
    return (oh0 + kh * p.dilation_h) * Wp + kw * p.dilation_w;
  }
};

// The zero-padded planes of one sample's group, in the compute type.
template <class T, class A>
void pad_sample(const Conv2dParams& p, const Geometry& g, const T* in, A* padded) {
  std::fill(padded, padded + g.padded_elems(), A(0));
  for (std::int64_t c = 0; c < g.Cg; ++c)
    for (std::int64_t h = 0; h < p.H; ++h) {
      const T* src = in + (c * p.H + h) * p.W;
      A* dst = padded + c * g.plane + (h + p.pad_h) * g.Wp + p.pad_w;
      for (std::int64_t w = 0; w < p.W; ++w) dst[w] = static_cast<A>(src[w]);
    }
}

// Rows [oh0, oh1) of Og output planes into the padded-width layout, discarded columns zero
// (the backward GEMMs read them, and zeros there contribute nothing).
template <class T, class A>
void widen_rows(const Geometry& g, const T* src, std::int64_t oh0, std::int64_t oh1, A* wide) {
  const std::int64_t P = (oh1 - oh0) * g.Wp;
  for (std::int64_t o = 0; o < g.Og; ++o)
    for (std::int64_t oh = oh0; oh < oh1; ++oh) {
      const T* s = src + (o * g.OH + oh) * g.OW;
      A* d = wide + o * P + (oh - oh0) * g.Wp;
      for (std::int64_t w = 0; w < g.OW; ++w) d[w] = static_cast<A>(s[w]);
      std::fill(d + g.OW, d + g.Wp, A(0));
    }
}

// weights [O][Cg][kH][kW] as one [Og][Cg] matrix per (group, tap): taps[(gi * taps + t) * Og * Cg].
template <class T, class A>
void split_taps(const Conv2dParams& p, const Geometry& g, const T* weight, A* taps) {
  for (std::int64_t gi = 0; gi < g.G; ++gi)
    for (std::int64_t t = 0; t < g.taps; ++t)
      for (std::int64_t o = 0; o < g.Og; ++o)
        for (std::int64_t c = 0; c < g.Cg; ++c)
          taps[((gi * g.taps + t) * g.Og + o) * g.Cg + c] =
              static_cast<A>(weight[((gi * g.Og + o) * g.Cg + c) * g.taps + t]);
}

struct Plan {
  Layout layout;
  std::size_t taps = 0, padded = 0, wide = 0, acc = 0, bias = 0;
};

template <class T>
Plan plan_for(const Conv2dParams& p, bool weight_grad) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  Plan plan;
  if (!weight_grad) plan.taps = plan.layout.add_shared<A>(p.O * g.Cg * g.taps);
  plan.padded = plan.layout.add_slot<A>(g.padded_elems());
  plan.wide = plan.layout.add_slot<A>(g.Og * g.tile_rows * g.Wp);
  if (weight_grad) {
    plan.acc = plan.layout.add_slot<A>(p.O * g.Cg * g.taps);
    plan.bias = plan.layout.add_slot<double>(p.O);
  }
  return plan;
}

}  // namespace

template <class T>
Layout shifted_forward_layout(const Conv2dParams& p) {
  return plan_for<T>(p, false).layout;
}
template <class T>
Layout shifted_backward_input_layout(const Conv2dParams& p) {
  return plan_for<T>(p, false).layout;
}
template <class T>
Layout shifted_backward_weight_layout(const Conv2dParams& p) {
  return plan_for<T>(p, true).layout;
}

template <class T>
void shifted_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                     T* output, void* wsp, std::size_t bytes) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  const Plan plan = plan_for<T>(p, false);
  const Workspace ws(plan.layout, wsp, bytes, shifted_units(p), "conv2d_forward");
  A* taps = ws.shared<A>(plan.taps);
  split_taps(p, g, weight, taps);
  for_slots(p.N, ws.slots(), [&](std::int64_t s, std::int64_t n0, std::int64_t n1) {
    A* padded = ws.slot<A>(s, plan.padded);
    A* wide = ws.slot<A>(s, plan.wide);
    for (std::int64_t n = n0; n < n1; ++n)
      for (std::int64_t gi = 0; gi < g.G; ++gi) {
        pad_sample(p, g, input + (n * p.C + gi * g.Cg) * p.H * p.W, padded);
        T* out = output + (n * p.O + gi * g.Og) * g.OH * g.OW;
        for (std::int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
          const std::int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows), P = (oh1 - oh0) * g.Wp;
          for (std::int64_t t = 0; t < g.taps; ++t)
            gemm<A>(false, false, g.Og, P, g.Cg, A(1), taps + (gi * g.taps + t) * g.Og * g.Cg, g.Cg,
                    padded + g.tap_offset(p, t, oh0), g.plane, t == 0 ? A(0) : A(1), wide, P);
          for (std::int64_t o = 0; o < g.Og; ++o) {
            const A b = bias ? static_cast<A>(bias[gi * g.Og + o]) : A(0);
            for (std::int64_t oh = oh0; oh < oh1; ++oh) {
              const A* src = wide + o * P + (oh - oh0) * g.Wp;
              T* dst = out + (o * g.OH + oh) * g.OW;
              for (std::int64_t w = 0; w < g.OW; ++w) dst[w] = static_cast<T>(src[w] + b);
            }
          }
        }
      }
  });
}

template <class T>
void shifted_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                            T* grad_input, void* wsp, std::size_t bytes) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  const Plan plan = plan_for<T>(p, false);
  const Workspace ws(plan.layout, wsp, bytes, shifted_units(p), "conv2d_backward_input");
  A* taps = ws.shared<A>(plan.taps);
  split_taps(p, g, weight, taps);
  for_slots(p.N, ws.slots(), [&](std::int64_t s, std::int64_t n0, std::int64_t n1) {
    A* padded = ws.slot<A>(s, plan.padded);  // the gradient of the padded input
    A* wide = ws.slot<A>(s, plan.wide);
    for (std::int64_t n = n0; n < n1; ++n)
      for (std::int64_t gi = 0; gi < g.G; ++gi) {
        std::fill(padded, padded + g.padded_elems(), A(0));
        const T* gout = grad_output + (n * p.O + gi * g.Og) * g.OH * g.OW;
        for (std::int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
          const std::int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows), P = (oh1 - oh0) * g.Wp;
          widen_rows(g, gout, oh0, oh1, wide);
          // Each tap scatters W_t^T g back to the positions it read: C is the shifted view.
          for (std::int64_t t = 0; t < g.taps; ++t)
            gemm<A>(true, false, g.Cg, P, g.Og, A(1), taps + (gi * g.taps + t) * g.Og * g.Cg, g.Cg,
                    wide, P, A(1), padded + g.tap_offset(p, t, oh0), g.plane);
        }
        T* gin = grad_input + (n * p.C + gi * g.Cg) * p.H * p.W;
        for (std::int64_t c = 0; c < g.Cg; ++c)
          for (std::int64_t h = 0; h < p.H; ++h) {
            const A* src = padded + c * g.plane + (h + p.pad_h) * g.Wp + p.pad_w;
            T* dst = gin + (c * p.H + h) * p.W;
            for (std::int64_t w = 0; w < p.W; ++w) dst[w] = static_cast<T>(src[w]);
          }
      }
  });
}

template <class T>
void shifted_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                             T* grad_weight, T* grad_bias, void* wsp, std::size_t bytes) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  const Plan plan = plan_for<T>(p, true);
  const Workspace ws(plan.layout, wsp, bytes, shifted_units(p), "conv2d_backward_weight");
  const std::int64_t weight_elems = p.O * g.Cg * g.taps;
  for_slots(p.N, ws.slots(), [&](std::int64_t s, std::int64_t n0, std::int64_t n1) {
    A* padded = ws.slot<A>(s, plan.padded);
    A* wide = ws.slot<A>(s, plan.wide);
    A* acc = ws.slot<A>(s, plan.acc);  // [group][tap][Og][Cg]
    double* bacc = ws.slot<double>(s, plan.bias);
    std::fill(acc, acc + weight_elems, A(0));
    std::fill(bacc, bacc + p.O, 0.0);
    for (std::int64_t n = n0; n < n1; ++n)
      for (std::int64_t gi = 0; gi < g.G; ++gi) {
        pad_sample(p, g, input + (n * p.C + gi * g.Cg) * p.H * p.W, padded);
        const T* gout = grad_output + (n * p.O + gi * g.Og) * g.OH * g.OW;
        for (std::int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
          const std::int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows), P = (oh1 - oh0) * g.Wp;
          widen_rows(g, gout, oh0, oh1, wide);
          for (std::int64_t t = 0; t < g.taps; ++t)
            gemm<A>(false, true, g.Og, g.Cg, P, A(1), wide, P, padded + g.tap_offset(p, t, oh0), g.plane,
                    A(1), acc + (gi * g.taps + t) * g.Og * g.Cg, g.Cg);
          if (grad_bias)
            for (std::int64_t o = 0; o < g.Og; ++o) bacc[gi * g.Og + o] += run_sum(wide + o * P, P);
        }
      }
  });
  // Sum the slots in slot order (deterministic), back into [O][Cg][kH][kW].
  parallel_for(0, weight_elems, 1 << 14, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const std::int64_t t = i % g.taps, c = (i / g.taps) % g.Cg, o_all = i / (g.taps * g.Cg);
      const std::int64_t gi = o_all / g.Og, o = o_all % g.Og;
      const std::int64_t from = ((gi * g.taps + t) * g.Og + o) * g.Cg + c;
      A sum = 0;
      for (std::int64_t sl = 0; sl < ws.slots(); ++sl) sum += ws.slot<const A>(sl, plan.acc)[from];
      grad_weight[i] = static_cast<T>(sum);
    }
  });
  if (grad_bias) sum_slots<double>(ws, plan.bias, p.O, grad_bias);
}

#define FRUGAL_INSTANTIATE_SHIFTED(T)                                                          \
  template Layout shifted_forward_layout<T>(const Conv2dParams&);                              \
  template Layout shifted_backward_input_layout<T>(const Conv2dParams&);                       \
  template Layout shifted_backward_weight_layout<T>(const Conv2dParams&);                      \
  template void shifted_forward<T>(const Conv2dParams&, const T*, const T*, const T*, T*,      \
                                   void*, std::size_t);                                        \
  template void shifted_backward_input<T>(const Conv2dParams&, const T*, const T*, T*, void*,  \
                                          std::size_t);                                        \
  template void shifted_backward_weight<T>(const Conv2dParams&, const T*, const T*, T*, T*,    \
                                           void*, std::size_t);
FRUGAL_INSTANTIATE_SHIFTED(float)
FRUGAL_INSTANTIATE_SHIFTED(double)
FRUGAL_INSTANTIATE_SHIFTED(Half)
FRUGAL_INSTANTIATE_SHIFTED(BFloat16)
#undef FRUGAL_INSTANTIATE_SHIFTED

}  // namespace frugal::kernels::cpu::conv_detail
