// Private to the conv implementation files: how a workspace is laid out (a shared region, then
// one region per thread "slot"), how slots are run in parallel, and the paths' entry points.
#pragma once

#include "kernels/cpu/isa_variant.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/parallel.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail {

inline constexpr std::size_t kAlign = 64;

inline std::size_t round_up(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Offsets of the arrays a path needs. The query and the kernel build the same layout, so the
// bytes reported are exactly the bytes used.
struct Layout {
  std::size_t shared = 0;    // bytes used once per call
  std::size_t per_slot = 0;  // bytes used by each thread slot

  template <class A>
  std::size_t add_shared(std::int64_t count) {
    const std::size_t at = shared;
    shared += round_up(static_cast<std::size_t>(count) * sizeof(A));
    return at;
  }
  template <class A>
  std::size_t add_slot(std::int64_t count) {
    const std::size_t at = per_slot;
    per_slot += round_up(static_cast<std::size_t>(count) * sizeof(A));
    return at;
  }
  // The slack of kAlign lets the caller's pointer have any alignment.
  std::size_t bytes(std::int64_t slots) const {
    const std::size_t total = shared + per_slot * static_cast<std::size_t>(slots);
    return total == 0 ? 0 : total + kAlign;
  }
};

// Slots a call may use: one per thread, never more than there are work units.
inline std::int64_t slot_count(std::int64_t units, std::int64_t threads) {
  return std::max<std::int64_t>(1, std::min(units, threads));
}

// A workspace bound to a layout: the number of slots that fit, and typed views.
class Workspace {
 public:
  Workspace(const Layout& layout, void* base, std::size_t bytes, std::int64_t units,
            const char* op);
  std::int64_t slots() const { return slots_; }
  template <class A>
  A* shared(std::size_t offset) const {
    return reinterpret_cast<A*>(base_ + offset);
  }
  template <class A>
  A* slot(std::int64_t s, std::size_t offset) const {
    return reinterpret_cast<A*>(base_ + shared_ + static_cast<std::size_t>(s) * per_slot_ + offset);
  }

 private:
  char* base_ = nullptr;
  std::size_t shared_ = 0, per_slot_ = 0;
  std::int64_t slots_ = 1;
};

// Calls fn(slot, begin, end) on `slots` contiguous slices of [0, units), each slice on its own
// thread (slots never exceed the thread count), so slot s may use workspace slot s alone.
template <class F>
void for_slots(std::int64_t units, std::int64_t slots, const F& fn) {
  parallel_for(0, slots, 1, [&](std::int64_t s0, std::int64_t s1) {
    for (std::int64_t s = s0; s < s1; ++s) fn(s, s * units / slots, (s + 1) * units / slots);
  });
}

// Sum of a contiguous run; the simd reduction keeps one fixed order, so results repeat.
template <class A>
A run_sum(const A* x, std::int64_t n) {
  A s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

// out[i] = sum over slots of the slot's array at `offset`, in slot order (deterministic).
template <class Acc, class T>
void sum_slots(const Workspace& ws, std::size_t offset, std::int64_t count, T* out) {
  parallel_for(0, count, 1 << 14, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      Acc s = 0;
      for (std::int64_t sl = 0; sl < ws.slots(); ++sl) s += ws.slot<const Acc>(sl, offset)[i];
      out[i] = static_cast<T>(static_cast<compute_t<T>>(s));
    }
  });
}

// One path's three directions; each has a matching layout function for the workspace query.
// FRUGAL_INSTANTIATE_CONV_PATH(algo, T) instantiates a path's six in its own file.
#define FRUGAL_INSTANTIATE_CONV_PATH(algo, T)                            \
  template Layout algo##_forward_layout<T>(const Conv2dParams&);         \
  template Layout algo##_backward_input_layout<T>(const Conv2dParams&);  \
  template Layout algo##_backward_weight_layout<T>(const Conv2dParams&); \
  FRUGAL_INSTANTIATE_CONV_DIRECTIONS(algo, T)

template <class T>
Layout im2col_forward_layout(const Conv2dParams& p);
template <class T>
Layout im2col_backward_input_layout(const Conv2dParams& p);
template <class T>
Layout im2col_backward_weight_layout(const Conv2dParams& p);
template <class T>
void im2col_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                    T* output, void* ws, std::size_t bytes);
template <class T>
void im2col_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                           T* grad_input, void* ws, std::size_t bytes);
template <class T>
void im2col_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                            T* grad_weight, T* grad_bias, void* ws, std::size_t bytes);

template <class T>
Layout shifted_forward_layout(const Conv2dParams& p);
template <class T>
Layout shifted_backward_input_layout(const Conv2dParams& p);
template <class T>
Layout shifted_backward_weight_layout(const Conv2dParams& p);
template <class T>
void shifted_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                     T* output, void* ws, std::size_t bytes);
template <class T>
void shifted_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                            T* grad_input, void* ws, std::size_t bytes);
template <class T>
void shifted_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                             T* grad_weight, T* grad_bias, void* ws, std::size_t bytes);

template <class T>
Layout pointwise_backward_weight_layout(const Conv2dParams& p);
template <class T>
Layout pointwise_forward_layout(const Conv2dParams& p);
template <class T>
void pointwise_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                       T* output, void* ws, std::size_t bytes);
template <class T>
void pointwise_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                              T* grad_input);
template <class T>
void pointwise_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                               T* grad_weight, T* grad_bias, void* ws, std::size_t bytes);

template <class T>
Layout depthwise_forward_layout(const Conv2dParams& p);
template <class T>
Layout depthwise_backward_input_layout(const Conv2dParams& p);
template <class T>
Layout depthwise_backward_weight_layout(const Conv2dParams& p);
template <class T>
void depthwise_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                       T* output, void* ws, std::size_t bytes);
template <class T>
void depthwise_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                              T* grad_input, void* ws, std::size_t bytes);
template <class T>
void depthwise_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                               T* grad_weight, T* grad_bias, void* ws, std::size_t bytes);

// The channel-blocked depthwise path (conv_depthwise_blocked.cpp), which the depthwise
// path hands strided layers computed in float to on AVX-512; one layout serves all three
// directions.
bool depthwise_blocked_available();
template <class T>
Layout depthwise_blocked_layout(const Conv2dParams& p);
template <class T>
void depthwise_blocked_forward(const Conv2dParams& p, const T* input, const T* weight,
                               const T* bias, T* output, void* ws, std::size_t bytes);
template <class T>
void depthwise_blocked_backward_input(const Conv2dParams& p, const T* grad_output,
                                      const T* weight, T* grad_input, void* ws, std::size_t bytes);
template <class T>
void depthwise_blocked_backward_weight(const Conv2dParams& p, const T* grad_output,
                                       const T* input, T* grad_weight, T* grad_bias, void* ws,
                                       std::size_t bytes);

// The most slots a convolution's work is worth: conv_min_work_per_thread() MACs each.
inline std::int64_t work_units(const Conv2dParams& p) {
  const std::int64_t macs = p.N * p.O * p.out_h() * p.out_w() * (p.C / p.groups) * p.kH * p.kW;
  return std::max<std::int64_t>(1, macs / std::max<std::int64_t>(1, conv_min_work_per_thread()));
}

// The grain of a parallel_for over units of `macs_per_unit` multiply-adds each: enough units
// per chunk for conv_min_work_per_thread().
inline std::int64_t unit_grain(std::int64_t macs_per_unit) {
  return std::max<std::int64_t>(
      1, conv_min_work_per_thread() / std::max<std::int64_t>(1, macs_per_unit));
}

// Work units (what the slots split) per path and direction, capped by the work itself.
inline std::int64_t im2col_units(const Conv2dParams& p) { return std::min(p.N, work_units(p)); }
inline std::int64_t shifted_units(const Conv2dParams& p) { return std::min(p.N, work_units(p)); }
inline std::int64_t pointwise_weight_units(const Conv2dParams& p) {
  return std::min(p.N, work_units(p));
}
inline std::int64_t depthwise_plane_units(const Conv2dParams& p) {
  return std::min(p.N * p.C, work_units(p));
}
inline std::int64_t depthwise_weight_units(const Conv2dParams& p) {
  return std::min(p.C, work_units(p));
}

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail
