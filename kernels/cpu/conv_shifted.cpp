// The stride-1 convolution path without im2col: on a zero-padded copy of each input sample,
// the kH*kW taps are kH*kW GEMMs of depth C/groups, each reading the padded planes at a shift.
// Output rows are computed at the padded width (the last kW-1 columns of each row are
// discarded), which makes every tap's operand a plain strided matrix: no column buffer, so
// the workspace is one padded sample instead of nine copies of it, and no per-row copying.
// For float on AVX-512, the taps' GEMMs give way to register-blocked kernels for all taps
// (flat_correlate.h): on the tensors' own planes with masked lanes when the output is the
// input's size (no copy at all), else on the padded planes when a sample's output fits one
// tile; forward and backward to the input. The weight gradient of 3x3 kernels has its own
// kernel on a position-major copy of the input. bfloat16 on a CPU with AVX512_BF16 runs the
// padded kernel on channel pairs with vdpbf16ps (flat_correlate_bf16.h) instead of widening
// to float; its weight gradient widens.
#include "kernels/cpu/isa_variant.h"

#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/conv_shifted_plan.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/flat_correlate.h"
#include "kernels/cpu/flat_correlate_bf16.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/position_major.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail {

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
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(g.taps));
  if (plan.flat) {
    for (std::int64_t t = 0; t < g.taps; ++t) offsets[t] = g.tap_offset(p, t, 0);
    if (plan.pairs) {
      pack_pair_weights(p, g, weight, false, reinterpret_cast<std::uint32_t*>(taps));
    } else {
      pack_flat_weights(p, g, weight, false, reinterpret_cast<float*>(taps));
    }
  } else {
    split_taps(p, g, weight, taps);
  }
  if constexpr (std::is_same_v<T, float>) {
    if (plan.same) {
      const SameTaps same = same_taps(p.H, p.W, tap_shifts(p, false));
      const std::int64_t HW = p.H * p.W;
      for_slots(p.N, ws.slots(), [&](std::int64_t, std::int64_t n0, std::int64_t n1) {
        for (std::int64_t n = n0; n < n1; ++n)
          for (std::int64_t gi = 0; gi < g.G; ++gi)
            flat_correlate_same(g.Og, g.Cg, same,
                                taps + gi * flat_weights_per_group(g.Og, g.Cg, g.taps),
                                bias ? bias + gi * g.Og : nullptr,
                                input + (n * p.C + gi * g.Cg) * HW, HW,
                                output + (n * p.O + gi * g.Og) * HW, HW);
      });
      return;
    }
  }
  for_slots(p.N, ws.slots(), [&](std::int64_t s, std::int64_t n0, std::int64_t n1) {
    A* padded = ws.slot<A>(s, plan.padded);
    A* wide = ws.slot<A>(s, plan.wide);
    for (std::int64_t n = n0; n < n1; ++n)
      for (std::int64_t gi = 0; gi < g.G; ++gi) {
        const T* in = input + (n * p.C + gi * g.Cg) * p.H * p.W;
        auto* padded_pairs = reinterpret_cast<std::uint32_t*>(padded);
        if constexpr (std::is_same_v<T, BFloat16>) {
          if (plan.pairs) {
            std::fill(padded_pairs, padded_pairs + (g.Cg + 1) / 2 * g.plane + g.slack, 0u);
            interleave_pairs(in, g.Cg, p.H, p.W, padded_pairs + p.pad_h * g.Wp + p.pad_w, g.plane,
                             g.Wp);
          }
        }
        if (!plan.pairs) pad_sample(p, g, in, padded);
        T* out = output + (n * p.O + gi * g.Og) * g.OH * g.OW;
        for (std::int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
          const std::int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows), P = (oh1 - oh0) * g.Wp;
          if constexpr (std::is_same_v<T, BFloat16>) {
            if (plan.pairs)
              flat_correlate_bf16(g.Og, g.Cg, g.taps, offsets.data(),
                                  reinterpret_cast<const std::uint32_t*>(taps) +
                                      gi * flat_correlate_bf16_packed_size(g.Og, g.Cg, g.taps),
                                  padded_pairs + oh0 * g.Wp, g.plane, P, wide, P);
          }
          if constexpr (std::is_same_v<A, float>) {
            if (plan.flat && !plan.pairs) {
              flat_correlate(g.Og, g.Cg, g.taps, offsets.data(),
                             taps + gi * flat_weights_per_group(g.Og, g.Cg, g.taps),
                             padded + oh0 * g.Wp, g.plane, P, wide, P);
            }
          }
          for (std::int64_t t = 0; t < g.taps && !plan.flat; ++t)
            gemm<A>(false, false, g.Og, P, g.Cg, A(1), taps + (gi * g.taps + t) * g.Og * g.Cg, g.Cg,
                    padded + g.tap_offset(p, t, oh0), g.plane, t == 0 ? A(0) : A(1), wide, P);
          for (std::int64_t o = 0; o < g.Og; ++o) {
            const A b = bias ? static_cast<A>(bias[gi * g.Og + o]) : A(0);
            for (std::int64_t oh = oh0; oh < oh1; ++oh) {
              const A* src = wide + o * P + (oh - oh0) * g.Wp;
              T* dst = out + (o * g.OH + oh) * g.OW;
              if constexpr (std::is_same_v<A, float>) {
                from_float(src, dst, g.OW, b);
              } else {
                for (std::int64_t w = 0; w < g.OW; ++w) dst[w] = static_cast<T>(src[w] + b);
              }
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
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(g.taps));
  if (plan.flat) {
    // The gradient at padded position r gathers tap t's output gradient at r - offset(t).
    for (std::int64_t t = 0; t < g.taps; ++t) offsets[t] = -g.tap_offset(p, t, 0);
    if (plan.pairs) {
      pack_pair_weights(p, g, weight, true, reinterpret_cast<std::uint32_t*>(taps));
    } else {
      pack_flat_weights(p, g, weight, true, reinterpret_cast<float*>(taps));
    }
  } else {
    split_taps(p, g, weight, taps);
  }
  if constexpr (std::is_same_v<T, float>) {
    if (plan.same) {
      // The gradient at input position r gathers tap t's output gradient at r - shift(t).
      const SameTaps same = same_taps(p.H, p.W, tap_shifts(p, true));
      const std::int64_t HW = p.H * p.W;
      for_slots(p.N, ws.slots(), [&](std::int64_t, std::int64_t n0, std::int64_t n1) {
        for (std::int64_t n = n0; n < n1; ++n)
          for (std::int64_t gi = 0; gi < g.G; ++gi)
            flat_correlate_same(g.Cg, g.Og, same,
                                taps + gi * flat_weights_per_group(g.Cg, g.Og, g.taps), nullptr,
                                grad_output + (n * p.O + gi * g.Og) * HW, HW,
                                grad_input + (n * p.C + gi * g.Cg) * HW, HW);
      });
      return;
    }
  }
  for_slots(p.N, ws.slots(), [&](std::int64_t s, std::int64_t n0, std::int64_t n1) {
    A* padded = ws.slot<A>(s, plan.padded);  // the gradient of the padded input
    A* wide = ws.slot<A>(s, plan.wide);
    for (std::int64_t n = n0; n < n1; ++n)
      for (std::int64_t gi = 0; gi < g.G; ++gi) {
        if constexpr (std::is_same_v<T, BFloat16>) {
          if (plan.pairs) {
            // As the float kernel below, on output-gradient channel pairs.
            const T* gout = grad_output + (n * p.O + gi * g.Og) * g.OH * g.OW;
            const std::int64_t front = g.front(p), L = g.margined_plane(p);
            auto* pairs = reinterpret_cast<std::uint32_t*>(wide);
            std::fill(pairs, pairs + (g.Og + 1) / 2 * L, 0u);
            interleave_pairs(gout, g.Og, g.OH, g.OW, pairs + front, L, g.Wp);
            flat_correlate_bf16(g.Cg, g.Og, g.taps, offsets.data(),
                                reinterpret_cast<const std::uint32_t*>(taps) +
                                    gi * flat_correlate_bf16_packed_size(g.Cg, g.Og, g.taps),
                                pairs + front + p.pad_h * g.Wp, L, p.H * g.Wp,
                                padded + p.pad_h * g.Wp, g.plane);
            copy_interior(p, g, padded, grad_input + (n * p.C + gi * g.Cg) * p.H * p.W);
            continue;
          }
        }
        if constexpr (std::is_same_v<A, float>) {
          if (plan.flat) {
            // Output gradient planes with zero margins, then the padded input's rows that
            // hold real input computed in one pass of the kernel.
            const T* gout = grad_output + (n * p.O + gi * g.Og) * g.OH * g.OW;
            const std::int64_t front = g.front(p), L = g.margined_plane(p);
            for (std::int64_t o = 0; o < g.Og; ++o) {
              A* plane = wide + o * L;
              std::fill(plane, plane + front, A(0));
              widen_rows(g, gout + o * g.OH * g.OW, 0, g.OH, plane + front, 1);
              std::fill(plane + front + g.OH * g.Wp, plane + L, A(0));
            }
            flat_correlate(g.Cg, g.Og, g.taps, offsets.data(),
                           taps + gi * flat_weights_per_group(g.Cg, g.Og, g.taps),
                           wide + front + p.pad_h * g.Wp, L, p.H * g.Wp, padded + p.pad_h * g.Wp,
                           g.plane);
            copy_interior(p, g, padded, grad_input + (n * p.C + gi * g.Cg) * p.H * p.W);
            continue;
          }
        }
        std::fill(padded, padded + g.padded_elems(), A(0));
        const T* gout = grad_output + (n * p.O + gi * g.Og) * g.OH * g.OW;
        for (std::int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
          const std::int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows), P = (oh1 - oh0) * g.Wp;
          widen_rows(g, gout, oh0, oh1, wide, g.Og);
          // Each tap scatters W_t^T g back to the positions it read: C is the shifted view.
          for (std::int64_t t = 0; t < g.taps; ++t)
            gemm<A>(true, false, g.Cg, P, g.Og, A(1), taps + (gi * g.taps + t) * g.Og * g.Cg, g.Cg,
                    wide, P, A(1), padded + g.tap_offset(p, t, oh0), g.plane);
        }
        copy_interior(p, g, padded, grad_input + (n * p.C + gi * g.Cg) * p.H * p.W);
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
    if constexpr (std::is_same_v<A, float>) {
      if (plan.flat) {
        // Chunks of samples: all their position-major padded inputs (and, for 16-bit data,
        // their output gradients widened to float), then the kernel per group over the
        // output rows, summing into acc laid out as grad_weight ([O][Cg][kH][kW]).
        std::vector<std::int64_t> offsets(9);
        for (std::int64_t t = 0; t < 9; ++t) offsets[t] = g.tap_offset(p, t, 0);
        const std::int64_t P = g.OH * g.OW, in_sample = position_major_sample(g),
                           out_sample = p.O * P;
        const std::int64_t Cp = position_major_channels(g), in_group = (g.plane + g.slack) * Cp;
        const PositionRows rows{.count = g.OH, .length = g.OW, .gout_pitch = g.OW, .in_pitch = g.Wp};
        const std::int64_t chunk = flat_weight_samples(p, g);
        for (std::int64_t c0 = n0; c0 < n1; c0 += chunk) {
          const std::int64_t count = std::min(chunk, n1 - c0);
          if constexpr (std::is_same_v<T, BFloat16>) {
            if (plan.pair_weight) {
              auto* pairs = reinterpret_cast<std::uint32_t*>(padded);
              const T* gout = grad_output + c0 * out_sample;
              for (std::int64_t k = 0; k < count; ++k) {
                pad_sample_position_major(p, g, input + (c0 + k) * p.C * p.H * p.W,
                                          padded + k * in_sample);
                to_position_pairs(pairs + k * in_sample, in_sample / Cp, Cp);
                if (grad_bias)
                  for (std::int64_t o = 0; o < p.O; ++o)
                    bacc[o] += widened_sum(gout + k * out_sample + o * P, P);
              }
              for (std::int64_t gi = 0; gi < g.G; ++gi)
                flat_correlate_bf16_weight_grad(g.Og, g.Cg, offsets.data(), gout + gi * g.Og * P,
                                                P, out_sample, pairs + gi * in_group, Cp,
                                                in_sample, count, rows,
                                                acc + gi * g.Og * g.Cg * 9);
              continue;
            }
          }
          const float* gout = nullptr;
          if constexpr (std::is_same_v<T, float>) {
            gout = grad_output + c0 * out_sample;
          } else {
            for (std::int64_t k = 0; k < count; ++k)
              to_float(grad_output + (c0 + k) * out_sample, wide + k * out_sample, out_sample);
            gout = wide;
          }
          for (std::int64_t k = 0; k < count; ++k) {
            pad_sample_position_major(p, g, input + (c0 + k) * p.C * p.H * p.W,
                                      padded + k * in_sample);
            if (grad_bias)
              for (std::int64_t o = 0; o < p.O; ++o)
                bacc[o] += run_sum(gout + k * out_sample + o * P, P);
          }
          for (std::int64_t gi = 0; gi < g.G; ++gi)
            flat_correlate_weight_grad(g.Og, g.Cg, offsets.data(), gout + gi * g.Og * P, P,
                                       out_sample, padded + gi * in_group, Cp, in_sample, count,
                                       rows, acc + gi * g.Og * g.Cg * 9);
        }
        return;
      }
    }
    for (std::int64_t n = n0; n < n1; ++n)
      for (std::int64_t gi = 0; gi < g.G; ++gi) {
        pad_sample(p, g, input + (n * p.C + gi * g.Cg) * p.H * p.W, padded);
        const T* gout = grad_output + (n * p.O + gi * g.Og) * g.OH * g.OW;
        for (std::int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
          const std::int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows), P = (oh1 - oh0) * g.Wp;
          widen_rows(g, gout, oh0, oh1, wide, g.Og);
          for (std::int64_t t = 0; t < g.taps; ++t)
            gemm<A>(false, true, g.Og, g.Cg, P, A(1), wide, P, padded + g.tap_offset(p, t, oh0),
                    g.plane, A(1), acc + (gi * g.taps + t) * g.Og * g.Cg, g.Cg);
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
      const std::int64_t from = plan.flat ? i : ((gi * g.taps + t) * g.Og + o) * g.Cg + c;
      A sum = 0;
      for (std::int64_t sl = 0; sl < ws.slots(); ++sl) sum += ws.slot<const A>(sl, plan.acc)[from];
      grad_weight[i] = static_cast<T>(sum);
    }
  });
  if (grad_bias) sum_slots<double>(ws, plan.bias, p.O, grad_bias);
}

#define FRUGAL_INSTANTIATE_SHIFTED(T) FRUGAL_INSTANTIATE_CONV_PATH(shifted, T)
FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_SHIFTED)
#undef FRUGAL_INSTANTIATE_SHIFTED

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail
