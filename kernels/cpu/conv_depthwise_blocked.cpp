// Depthwise convolution on blocks of 16 channels, for float computation on AVX-512: each
// sample's 16 channel planes are rewritten position-major and zero-padded (one vector per
// position holds the 16 channels), so that every tap of every output position is one vector
// multiply-add with the 16 channels' weights for that tap, whatever the stride, dilation or
// plane size. The per-plane path (conv_depthwise.cpp) vectorises along a plane's rows
// instead; on mobilenet's strided layers, 7x7 and 14x14 outputs, its vectors were mostly
// short rows and its strided phase gathers element by element, and it ran at 0.4-0.9x of
// oneDNN (which blocks channels the same way). The rewrites in and out are 16x16 register
// transposes (position_major.h).
#include "kernels/cpu/isa_variant.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/position_major.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail {

#if FRUGAL_CONVERT_AVX512

namespace {

constexpr std::int64_t kLanes = 16;  // channels per block, one vector

struct Geometry {
  std::int64_t C, H, W, OH, OW, Hp, Wp, kH, kW, sh, sw, dh, dw, taps, blocks;
  explicit Geometry(const Conv2dParams& p)
      : C(p.C),
        H(p.H),
        W(p.W),
        OH(p.out_h()),
        OW(p.out_w()),
        Hp(p.H + 2 * p.pad_h),
        Wp(p.W + 2 * p.pad_w),
        kH(p.kH),
        kW(p.kW),
        sh(p.stride_h),
        sw(p.stride_w),
        dh(p.dilation_h),
        dw(p.dilation_w),
        taps(p.kH * p.kW),
        blocks((p.C + kLanes - 1) / kLanes) {}
  std::int64_t padded_positions() const { return Hp * Wp; }
  std::int64_t out_positions() const { return OH * OW; }
  // Offset, in padded positions, of tap t from the top-left corner of output (oh, ow)'s window.
  std::int64_t tap_offset(std::int64_t t) const { return t / kW * dh * Wp + t % kW * dw; }
  std::int64_t window(std::int64_t oh, std::int64_t ow) const { return oh * sh * Wp + ow * sw; }
  // window() of every output position in order, so that the loops over positions need no
  // division.
  std::vector<std::int64_t> windows() const {
    std::vector<std::int64_t> w;
    w.reserve(static_cast<std::size_t>(OH * OW));
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) w.push_back(window(oh, ow) * kLanes);
    return w;
  }
  std::int64_t channels(std::int64_t block) const { return std::min(kLanes, C - block * kLanes); }
};

struct Plan {
  Layout layout;
  std::size_t padded = 0, dense = 0, weights = 0;
};

Plan plan_for(const Conv2dParams& p) {
  const Geometry g(p);
  Plan plan;
  plan.padded = plan.layout.add_slot<float>(g.padded_positions() * kLanes);
  plan.dense = plan.layout.add_slot<float>(g.out_positions() * kLanes);
  plan.weights = plan.layout.add_slot<float>(g.taps * kLanes);
  return plan;
}

// The 16 channels' weights of each tap, one vector per tap: w16[t][lane].
template <class T>
void block_weights(const Geometry& g, const T* weight, std::int64_t block, float* w16) {
  std::fill(w16, w16 + g.taps * kLanes, 0.0f);
  for (std::int64_t j = 0; j < g.channels(block); ++j)
    for (std::int64_t t = 0; t < g.taps; ++t)
      w16[t * kLanes + j] = static_cast<float>(weight[(block * kLanes + j) * g.taps + t]);
}

// One sample's channel block, zero-padded and position-major: padded[pos][lane].
template <class T>
void load_padded(const Conv2dParams& p, const Geometry& g, const T* sample, std::int64_t block,
                 float* padded) {
  std::fill(padded, padded + g.padded_positions() * kLanes, 0.0f);
  to_position_major(sample + block * kLanes * p.H * p.W, g.channels(block), p.H, p.W,
                    padded + (p.pad_h * g.Wp + p.pad_w) * kLanes, g.Wp, kLanes);
}

// Output positions per step of the forward loop: independent sums, so that the taps'
// multiply-adds do not wait on each other.
constexpr int kStep = 8;

}  // namespace

template <class T>
Layout depthwise_blocked_layout(const Conv2dParams& p) {
  return plan_for(p).layout;
}

template <class T>
void depthwise_blocked_forward(const Conv2dParams& p, const T* input, const T* weight,
                               const T* bias, T* output, void* wsp, std::size_t bytes) {
  const Geometry g(p);
  const Plan plan = plan_for(p);
  const Workspace ws(plan.layout, wsp, bytes, depthwise_plane_units(p), "conv2d_forward");
  const std::int64_t P = g.out_positions();
  const std::vector<std::int64_t> windows = g.windows();
  for_slots(p.N * g.blocks, ws.slots(), [&](std::int64_t s, std::int64_t u0, std::int64_t u1) {
    float* padded = ws.slot<float>(s, plan.padded);
    float* dense = ws.slot<float>(s, plan.dense);
    float* w16 = ws.slot<float>(s, plan.weights);
    for (std::int64_t u = u0; u < u1; ++u) {
      const std::int64_t n = u / g.blocks, block = u % g.blocks;
      block_weights(g, weight, block, w16);
      alignas(64) float b16[kLanes] = {};
      for (std::int64_t j = 0; bias && j < g.channels(block); ++j)
        b16[j] = static_cast<float>(bias[block * kLanes + j]);
      load_padded(p, g, input + n * p.C * p.H * p.W, block, padded);
      const __m512 bv = _mm512_load_ps(b16);
      for (std::int64_t q0 = 0; q0 < P; q0 += kStep) {
        const int count = static_cast<int>(std::min<std::int64_t>(kStep, P - q0));
        const float* at[kStep];
        __m512 acc[kStep];
        for (int k = 0; k < kStep; ++k) {
          at[k] = padded + windows[q0 + std::min(k, count - 1)];
          acc[k] = bv;
        }
        for (std::int64_t t = 0; t < g.taps; ++t) {
          const __m512 wt = _mm512_load_ps(w16 + t * kLanes);
          const std::int64_t off = g.tap_offset(t) * kLanes;
#pragma GCC unroll 8
          for (int k = 0; k < kStep; ++k)
            acc[k] = _mm512_fmadd_ps(wt, _mm512_load_ps(at[k] + off), acc[k]);
        }
        for (int k = 0; k < count; ++k) _mm512_store_ps(dense + (q0 + k) * kLanes, acc[k]);
      }
      from_position_major(dense, g.channels(block), P, kLanes,
                          output + (n * p.C + block * kLanes) * P, P);
    }
  });
}

// The input gradient scatters: each output position's gradient, times each tap's weights,
// adds onto the padded position that tap read; the interior is then rewritten back.
template <class T>
void depthwise_blocked_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                                      T* grad_input, void* wsp, std::size_t bytes) {
  const Geometry g(p);
  const Plan plan = plan_for(p);
  const Workspace ws(plan.layout, wsp, bytes, depthwise_plane_units(p), "conv2d_backward_input");
  const std::int64_t P = g.out_positions();
  for_slots(p.N * g.blocks, ws.slots(), [&](std::int64_t s, std::int64_t u0, std::int64_t u1) {
    float* padded = ws.slot<float>(s, plan.padded);
    float* dense = ws.slot<float>(s, plan.dense);
    float* w16 = ws.slot<float>(s, plan.weights);
    for (std::int64_t u = u0; u < u1; ++u) {
      const std::int64_t n = u / g.blocks, block = u % g.blocks;
      block_weights(g, weight, block, w16);
      // A dense plane is one row of P positions: whole 16-position blocks through the
      // transpose, not one short output row at a time.
      to_position_major(grad_output + (n * p.C + block * kLanes) * P, g.channels(block), 1, P,
                        dense, P, kLanes);
      std::fill(padded, padded + g.padded_positions() * kLanes, 0.0f);
      for (std::int64_t t = 0; t < g.taps; ++t) {
        const __m512 wt = _mm512_load_ps(w16 + t * kLanes);
        float* base = padded + g.tap_offset(t) * kLanes;
        for (std::int64_t oh = 0; oh < g.OH; ++oh)
          for (std::int64_t ow = 0; ow < g.OW; ++ow) {
            float* dst = base + g.window(oh, ow) * kLanes;
            const __m512 go = _mm512_load_ps(dense + (oh * g.OW + ow) * kLanes);
            _mm512_store_ps(dst, _mm512_fmadd_ps(wt, go, _mm512_load_ps(dst)));
          }
      }
      T* gin = grad_input + (n * p.C + block * kLanes) * p.H * p.W;
      for (std::int64_t y = 0; y < p.H; ++y)
        from_position_major(padded + ((y + p.pad_h) * g.Wp + p.pad_w) * kLanes, g.channels(block),
                            p.W, kLanes, gin + y * p.W, p.H * p.W);
    }
  });
}

// Parallel over channel blocks: each block's 16 x taps sums run over the whole batch on one
// thread, in registers, so no per-thread copies are summed afterwards.
template <class T>
void depthwise_blocked_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                                       T* grad_weight, T* grad_bias, void* wsp, std::size_t bytes) {
  const Geometry g(p);
  const Plan plan = plan_for(p);
  const Workspace ws(plan.layout, wsp, bytes, depthwise_weight_units(p), "conv2d_backward_weight");
  const std::int64_t P = g.out_positions();
  const std::vector<std::int64_t> windows = g.windows();
  for_slots(g.blocks, ws.slots(), [&](std::int64_t s, std::int64_t b0, std::int64_t b1) {
    float* padded = ws.slot<float>(s, plan.padded);
    float* dense = ws.slot<float>(s, plan.dense);
    float* sums = ws.slot<float>(s, plan.weights);
    for (std::int64_t block = b0; block < b1; ++block) {
      std::fill(sums, sums + g.taps * kLanes, 0.0f);
      __m512 bias_sum = _mm512_setzero_ps();
      for (std::int64_t n = 0; n < p.N; ++n) {
        load_padded(p, g, input + n * p.C * p.H * p.W, block, padded);
        to_position_major(grad_output + (n * p.C + block * kLanes) * P, g.channels(block), 1, P,
                          dense, P, kLanes);
        for (std::int64_t q = 0; q < P; ++q)
          bias_sum = _mm512_add_ps(bias_sum, _mm512_load_ps(dense + q * kLanes));
        for (std::int64_t t = 0; t < g.taps; ++t) {
          const float* base = padded + g.tap_offset(t) * kLanes;
          __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                           _mm512_setzero_ps()};
          for (std::int64_t q = 0; q < P; ++q) {
            const __m512 x = _mm512_load_ps(base + windows[q]);
            acc[q % 4] = _mm512_fmadd_ps(_mm512_load_ps(dense + q * kLanes), x, acc[q % 4]);
          }
          const __m512 total =
              _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
          _mm512_store_ps(sums + t * kLanes,
                          _mm512_add_ps(_mm512_load_ps(sums + t * kLanes), total));
        }
      }
      alignas(64) float b16[kLanes];
      _mm512_store_ps(b16, bias_sum);
      for (std::int64_t j = 0; j < g.channels(block); ++j) {
        const std::int64_t c = block * kLanes + j;
        for (std::int64_t t = 0; t < g.taps; ++t)
          grad_weight[c * g.taps + t] = static_cast<T>(sums[t * kLanes + j]);
        if (grad_bias) grad_bias[c] = static_cast<T>(b16[j]);
      }
    }
  });
}

bool depthwise_blocked_available() { return __builtin_cpu_supports("avx512f"); }

#else

template <class T>
Layout depthwise_blocked_layout(const Conv2dParams&) {
  return {};
}
template <class T>
void depthwise_blocked_forward(const Conv2dParams&, const T*, const T*, const T*, T*, void*,
                               std::size_t) {}
template <class T>
void depthwise_blocked_backward_input(const Conv2dParams&, const T*, const T*, T*, void*,
                                      std::size_t) {}
template <class T>
void depthwise_blocked_backward_weight(const Conv2dParams&, const T*, const T*, T*, T*, void*,
                                       std::size_t) {}
bool depthwise_blocked_available() { return false; }

#endif

#define FRUGAL_INSTANTIATE_DEPTHWISE_BLOCKED(T)                                                   \
  template Layout depthwise_blocked_layout<T>(const Conv2dParams&);                               \
  template void depthwise_blocked_forward<T>(const Conv2dParams&, const T*, const T*, const T*,   \
                                             T*, void*, std::size_t);                             \
  template void depthwise_blocked_backward_input<T>(const Conv2dParams&, const T*, const T*, T*,  \
                                                    void*, std::size_t);                          \
  template void depthwise_blocked_backward_weight<T>(const Conv2dParams&, const T*, const T*, T*, \
                                                     T*, void*, std::size_t);
FRUGAL_INSTANTIATE_DEPTHWISE_BLOCKED(float)
FRUGAL_INSTANTIATE_DEPTHWISE_BLOCKED(Half)
FRUGAL_INSTANTIATE_DEPTHWISE_BLOCKED(BFloat16)
#undef FRUGAL_INSTANTIATE_DEPTHWISE_BLOCKED

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail
