// The plan of a stride-1 convolution on the shifted path (internal to conv_shifted.cpp): its
// geometry, which kernel runs each direction, the padded and position-major copies it makes.
#pragma once

#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/flat_correlate.h"
#include "kernels/cpu/flat_correlate_bf16.h"
#include "kernels/cpu/position_major.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail {

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
  // The direct kernel's backward reads the output gradient at negative shifts: each plane of
  // it carries `front` zeros before it and, after its OH * Wp positions, zeros up to `plane`.
  std::int64_t front(const Conv2dParams& p) const {
    return (p.kH - 1) * p.dilation_h * Wp + (p.kW - 1) * p.dilation_w;
  }
  std::int64_t margined_plane(const Conv2dParams& p) const { return front(p) + plane; }
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
      if constexpr (std::is_same_v<A, float>) {
        to_float(src, dst, p.W);
      } else {
        for (std::int64_t w = 0; w < p.W; ++w) dst[w] = static_cast<A>(src[w]);
      }
    }
}

// Rows [oh0, oh1) of Og output planes into the padded-width layout, discarded columns zero
// (the backward GEMMs read them, and zeros there contribute nothing).
template <class T, class A>
void widen_rows(const Geometry& g, const T* src, std::int64_t oh0, std::int64_t oh1, A* wide,
                std::int64_t planes) {
  const std::int64_t P = (oh1 - oh0) * g.Wp;
  for (std::int64_t o = 0; o < planes; ++o)
    for (std::int64_t oh = oh0; oh < oh1; ++oh) {
      const T* s = src + (o * g.OH + oh) * g.OW;
      A* d = wide + o * P + (oh - oh0) * g.Wp;
      if constexpr (std::is_same_v<A, float>) {
        to_float(s, d, g.OW);
      } else {
        for (std::int64_t w = 0; w < g.OW; ++w) d[w] = static_cast<A>(s[w]);
      }
      std::fill(d + g.OW, d + g.Wp, A(0));
    }
}

// The input-sized part of padded planes (the gradient of the unpadded input), out of them.
template <class T, class A>
void copy_interior(const Conv2dParams& p, const Geometry& g, const A* padded, T* out) {
  for (std::int64_t c = 0; c < g.Cg; ++c)
    for (std::int64_t h = 0; h < p.H; ++h) {
      const A* src = padded + c * g.plane + (h + p.pad_h) * g.Wp + p.pad_w;
      T* dst = out + (c * p.H + h) * p.W;
      if constexpr (std::is_same_v<A, float>) {
        from_float(src, dst, p.W);
      } else {
        for (std::int64_t w = 0; w < p.W; ++w) dst[w] = static_cast<T>(src[w]);
      }
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

// Whether the register-blocked kernel computes this convolution's forward and input
// gradient: float data or 16-bit data computed in float (widened into the workspace, which
// the kernel reads anyway), a CPU with AVX-512, and a sample's output in one tile.
template <class T>
bool use_flat_kernel(const Geometry& g) {
  return std::is_same_v<compute_t<T>, float> && g.tile_rows == g.OH && flat_correlate_available();
}

// The weights of every group packed for the kernel, forward (outputs Og from inputs Cg) or
// backward (outputs Cg from inputs Og, the same weights read transposed).
std::int64_t flat_weights_per_group(std::int64_t outs, std::int64_t ins, std::int64_t taps) {
  return flat_correlate_packed_size(outs, ins, taps);
}

template <class T>
void pack_flat_weights(const Conv2dParams& p, const Geometry& g, const T* weight, bool backward,
                       float* packed) {
  const std::int64_t outs = backward ? g.Cg : g.Og, ins = backward ? g.Og : g.Cg;
  for (std::int64_t gi = 0; gi < g.G; ++gi) {
    const T* wg = weight + gi * g.Og * g.Cg * g.taps;
    pack_flat_correlate_weights(
        outs, ins, g.taps,
        [&](std::int64_t o, std::int64_t c, std::int64_t t) {
          // forward: output o from input c; backward: input gradient o from output gradient c
          return static_cast<float>(backward ? wg[(c * g.Cg + o) * g.taps + t]
                                             : wg[(o * g.Cg + c) * g.taps + t]);
        },
        packed + gi * flat_weights_per_group(outs, ins, g.taps));
  }
}

// Samples whose padded planes the weight-gradient kernel takes at once, so that its
// registers carry over all their positions before being added to the slot's sums: as many
// as fit in about 1 MiB (the L2 cache), at most 16.
// The weight-gradient kernel reads the input position-major, [group][position][channel],
// with each group's channels padded to a multiple of 16 (one aligned vector).
std::int64_t position_major_channels(const Geometry& g) { return (g.Cg + 15) / 16 * 16; }
std::int64_t position_major_sample(const Geometry& g) {
  return g.G * (g.plane + g.slack) * position_major_channels(g);
}

std::int64_t flat_weight_samples(const Conv2dParams& p, const Geometry& g) {
  const std::int64_t per_sample =
      static_cast<std::int64_t>(sizeof(float)) * (position_major_sample(g) + p.O * g.OH * g.Wp);
  return std::clamp<std::int64_t>((std::int64_t{1} << 20) / per_sample, 1, 16);
}

// One sample's input, zero-padded and position-major (see position_major_channels).
template <class T>
void pad_sample_position_major(const Conv2dParams& p, const Geometry& g, const T* in, float* out) {
  const std::int64_t Cp = position_major_channels(g), group = (g.plane + g.slack) * Cp;
  std::fill(out, out + position_major_sample(g), 0.0f);
  for (std::int64_t gi = 0; gi < g.G; ++gi)
    to_position_major(in + gi * g.Cg * p.H * p.W, g.Cg, p.H, p.W,
                      out + gi * group + (p.pad_h * g.Wp + p.pad_w) * Cp, g.Wp, Cp);
}

// Position-major floats holding bfloat16 values (exactly) rewritten in place as position-pair
// words: word [pos][c] = bf16_pair(x[pos][c], x[pos + 1][c]), zero past the last position.
// Each position is read before it is overwritten, the one after it still unchanged.
void to_position_pairs(std::uint32_t* buf, std::int64_t positions, std::int64_t channel_stride) {
  for (std::int64_t pos = 0; pos < positions; ++pos)
    for (std::int64_t c = 0; c < channel_stride; ++c) {
      const std::uint32_t hi = pos + 1 < positions ? buf[(pos + 1) * channel_stride + c] : 0u;
      std::uint32_t& word = buf[pos * channel_stride + c];
      word = word >> 16 | (hi & 0xFFFF0000u);
    }
}

// The float sum of n bfloat16 values.
template <class T>
double widened_sum(const T* x, std::int64_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) s += static_cast<float>(x[i]);
  return s;
}

template <class T>
bool use_flat_weight_kernel(const Geometry& g) {
  return use_flat_kernel<T>(g) && g.taps == 9;
}

// bfloat16 planes [c][row][col] (pitch cols) as channel-pair words: dst[pair * dst_plane +
// row * dst_pitch + col]; a missing last channel pairs with zero. Padding stays as it was.
void interleave_pairs(const BFloat16* src, std::int64_t channels, std::int64_t rows,
                      std::int64_t cols, std::uint32_t* dst, std::int64_t dst_plane,
                      std::int64_t dst_pitch) {
  const auto* bits = reinterpret_cast<const std::uint16_t*>(src);
  for (std::int64_t c = 0; c < channels; c += 2)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::uint16_t* lo = bits + (c * rows + r) * cols;
      std::uint32_t* d = dst + (c / 2) * dst_plane + r * dst_pitch;
      if (c + 1 < channels) {
        const std::uint16_t* hi = lo + rows * cols;
        for (std::int64_t w = 0; w < cols; ++w)
          d[w] = std::uint32_t{lo[w]} | std::uint32_t{hi[w]} << 16;
      } else {
        for (std::int64_t w = 0; w < cols; ++w) d[w] = lo[w];
      }
    }
}

template <class T>
void pack_pair_weights(const Conv2dParams& p, const Geometry& g, const T* weight, bool backward,
                       std::uint32_t* packed) {
  const std::int64_t outs = backward ? g.Cg : g.Og, ins = backward ? g.Og : g.Cg;
  for (std::int64_t gi = 0; gi < g.G; ++gi) {
    const T* wg = weight + gi * g.Og * g.Cg * g.taps;
    pack_flat_correlate_bf16_weights(
        outs, ins, g.taps,
        [&](std::int64_t o, std::int64_t c, std::int64_t t) {
          return static_cast<float>(backward ? wg[(c * g.Cg + o) * g.taps + t]
                                             : wg[(o * g.Cg + c) * g.taps + t]);
        },
        packed + gi * flat_correlate_bf16_packed_size(outs, ins, g.taps));
  }
}

// Whether forward and input gradient run the kernel straight on the tensors' unpadded planes
// (flat_correlate_same): float tensors (read and written in place), and an output the size of
// the input, so that positions of output and input planes line up.
template <class T>
bool use_same_kernel(const Conv2dParams& p, const Geometry& g) {
  return std::is_same_v<T, float> && g.OH == p.H && g.OW == p.W && flat_correlate_available();
}

// Tap t's shift from an output position to the input position it reads (forward), or from an
// input-gradient position to the output-gradient position (backward: the negated shift).
std::vector<TapShift> tap_shifts(const Conv2dParams& p, bool backward) {
  std::vector<TapShift> shifts;
  for (std::int64_t kh = 0; kh < p.kH; ++kh)
    for (std::int64_t kw = 0; kw < p.kW; ++kw) {
      const TapShift s{kh * p.dilation_h - p.pad_h, kw * p.dilation_w - p.pad_w};
      shifts.push_back(backward ? TapShift{-s.dy, -s.dx} : s);
    }
  return shifts;
}

struct Plan {
  Layout layout;
  bool same = false;  // forward and input gradient: use_same_kernel
  bool flat = false;
  // The flat kernel on bfloat16 channel pairs: the padded input (forward) and the margined
  // output gradient (backward) hold pair words in their float-sized slots, which fit them.
  bool pairs = false;
  // The weight gradient on bfloat16 position pairs (flat_correlate_bf16_weight_grad): the
  // position-major input becomes pair words in place, the output gradient is read in place.
  bool pair_weight = false;
  std::size_t taps = 0, padded = 0, wide = 0, acc = 0, bias = 0;
};

template <class T>
Plan plan_for(const Conv2dParams& p, bool weight_grad) {
  using A = compute_t<T>;
  const Geometry g(p, sizeof(A));
  Plan plan;
  plan.flat = weight_grad ? use_flat_weight_kernel<T>(g)
                          : use_flat_kernel<T>(g) || use_same_kernel<T>(p, g);
  plan.pairs =
      !weight_grad && plan.flat && std::is_same_v<T, BFloat16> && flat_correlate_bf16_available();
  const std::int64_t tap_elems = plan.flat
                                     ? g.G * std::max(flat_weights_per_group(g.Og, g.Cg, g.taps),
                                                      flat_weights_per_group(g.Cg, g.Og, g.taps))
                                     : p.O * g.Cg * g.taps;
  if (!weight_grad) plan.taps = plan.layout.add_shared<A>(tap_elems);
  plan.pair_weight = weight_grad && plan.flat && std::is_same_v<T, BFloat16> && g.OW % 2 == 0 &&
                     flat_correlate_bf16_available();
  plan.same = !weight_grad && use_same_kernel<T>(p, g);
  if (plan.same) return plan;  // no per-slot buffers: the kernel reads and writes the tensors
  if (weight_grad && plan.flat) {
    const std::int64_t chunk = flat_weight_samples(p, g);
    plan.padded = plan.layout.add_slot<A>(chunk * position_major_sample(g));
    // Float output gradients are read in place; others are widened to float first.
    if (!std::is_same_v<T, float> && !plan.pair_weight)
      plan.wide = plan.layout.add_slot<A>(chunk * p.O * g.OH * g.OW);
  } else {
    plan.padded = plan.layout.add_slot<A>(g.padded_elems());
    plan.wide =
        plan.layout.add_slot<A>(plan.flat ? g.Og * g.margined_plane(p) : g.Og * g.tile_rows * g.Wp);
  }
  if (weight_grad) {
    plan.acc = plan.layout.add_slot<A>(p.O * g.Cg * g.taps);
    plan.bias = plan.layout.add_slot<double>(p.O);
  }
  return plan;
}

}  // namespace

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail
