// 1x1 convolution with stride 1 and no padding: each sample's [C, H*W] plane already is the
// gemm operand, so forward and grad input are plain gemms. For float on AVX-512 the forward
// is the shifted path's register-blocked kernel with one tap (flat_correlate.h), which
// writes the output once where a GEMM through Eigen first zeroes it; the workspace then
// holds the packed weights. (The same kernel for the input gradient measured slower than
// the GEMM on mobilenet's layers, so that stays a GEMM.)
#include "kernels/cpu/isa_variant.h"

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/flat_correlate.h"
#include "kernels/cpu/gemm.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail {

namespace {

struct Shape {
  std::int64_t G, Cg, Og, HW;
  explicit Shape(const Conv2dParams& p)
      : G(p.groups), Cg(p.C / p.groups), Og(p.O / p.groups), HW(p.H * p.W) {}
};

struct Plan {
  Layout layout;
  std::size_t acc = 0, bias = 0;
};

template <class T>
bool use_flat_kernel() {
  return std::is_same_v<T, float> && flat_correlate_available();
}

// The weights of every group packed for the kernel: outputs Og from inputs Cg.
template <class T>
Plan packed_plan(const Conv2dParams& p) {
  const Shape s(p);
  Plan plan;
  if (use_flat_kernel<T>())
    plan.acc = plan.layout.add_shared<float>(s.G * flat_correlate_packed_size(s.Og, s.Cg, 1));
  return plan;
}

template <class T>
void pack_weights(const Conv2dParams& p, const T* weight, float* packed) {
  const Shape s(p);
  for (std::int64_t g = 0; g < s.G; ++g) {
    const T* wg = weight + g * s.Og * s.Cg;
    pack_flat_correlate_weights(
        s.Og, s.Cg, 1,
        [&](std::int64_t o, std::int64_t c, std::int64_t) {
          return static_cast<float>(wg[o * s.Cg + c]);
        },
        packed + g * flat_correlate_packed_size(s.Og, s.Cg, 1));
  }
}

template <class T>
Plan weight_plan(const Conv2dParams& p) {
  Plan plan;
  plan.acc = plan.layout.add_slot<T>(p.O * (p.C / p.groups));
  plan.bias = plan.layout.add_slot<double>(p.O);
  return plan;
}

}  // namespace

template <class T>
Layout pointwise_forward_layout(const Conv2dParams& p) {
  return packed_plan<T>(p).layout;
}

template <class T>
Layout pointwise_backward_weight_layout(const Conv2dParams& p) {
  return weight_plan<T>(p).layout;
}

// One (sample, group) product per unit: with a single unit (or too little work to share)
// parallel_for stays on the caller, and Eigen threads that gemm itself.
template <class T>
void pointwise_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                       T* output, void* wsp, std::size_t bytes) {
  const Shape s(p);
  if constexpr (std::is_same_v<T, float>) {
    if (use_flat_kernel<T>()) {
      const Plan plan = packed_plan<T>(p);
      const Workspace ws(plan.layout, wsp, bytes, 1, "conv2d_forward");
      float* packed = ws.shared<float>(plan.acc);
      pack_weights(p, weight, packed);
      const std::int64_t zero = 0, per_group = flat_correlate_packed_size(s.Og, s.Cg, 1);
      parallel_for(0, p.N * s.G, unit_grain(s.Og * s.Cg * s.HW),
                   [&](std::int64_t u0, std::int64_t u1) {
                     for (std::int64_t u = u0; u < u1; ++u) {
                       const std::int64_t n = u / s.G, g = u % s.G;
                       T* out = output + (n * p.O + g * s.Og) * s.HW;
                       flat_correlate(s.Og, s.Cg, 1, &zero, packed + g * per_group,
                                      input + (n * p.C + g * s.Cg) * s.HW, s.HW, s.HW, out, s.HW);
                       if (bias)
                         for (std::int64_t o = 0; o < s.Og; ++o)
                           for (std::int64_t i = 0; i < s.HW; ++i)
                             out[o * s.HW + i] += bias[g * s.Og + o];
                     }
                   });
      return;
    }
  }
  parallel_for(0, p.N * s.G, unit_grain(s.Og * s.Cg * s.HW), [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const std::int64_t n = u / s.G, g = u % s.G;
      T* out = output + (n * p.O + g * s.Og) * s.HW;
      T beta = 0;
      if (bias) {
        for (std::int64_t o = 0; o < s.Og; ++o)
          std::fill(out + o * s.HW, out + (o + 1) * s.HW, bias[g * s.Og + o]);
        beta = 1;
      }
      gemm<T>(false, false, s.Og, s.HW, s.Cg, T(1), weight + g * s.Og * s.Cg, s.Cg,
              input + (n * p.C + g * s.Cg) * s.HW, s.HW, beta, out, s.HW);
    }
  });
}

template <class T>
void pointwise_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                              T* grad_input) {
  const Shape s(p);
  parallel_for(0, p.N * s.G, unit_grain(s.Og * s.Cg * s.HW), [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const std::int64_t n = u / s.G, g = u % s.G;
      gemm<T>(true, false, s.Cg, s.HW, s.Og, T(1), weight + g * s.Og * s.Cg, s.Cg,
              grad_output + (n * p.O + g * s.Og) * s.HW, s.HW, T(0),
              grad_input + (n * p.C + g * s.Cg) * s.HW, s.HW);
    }
  });
}

template <class T>
void pointwise_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                               T* grad_weight, T* grad_bias, void* wsp, std::size_t bytes) {
  const Shape s(p);
  const Plan plan = weight_plan<T>(p);
  const Workspace ws(plan.layout, wsp, bytes, pointwise_weight_units(p), "conv2d_backward_weight");
  for_slots(p.N, ws.slots(), [&](std::int64_t sl, std::int64_t n0, std::int64_t n1) {
    T* acc = ws.slot<T>(sl, plan.acc);
    double* bacc = ws.slot<double>(sl, plan.bias);
    std::fill(acc, acc + p.O * s.Cg, T(0));
    std::fill(bacc, bacc + p.O, 0.0);
    for (std::int64_t n = n0; n < n1; ++n) {
      for (std::int64_t g = 0; g < s.G; ++g) {
        const T* gout = grad_output + (n * p.O + g * s.Og) * s.HW;
        gemm<T>(false, true, s.Og, s.Cg, s.HW, T(1), gout, s.HW,
                input + (n * p.C + g * s.Cg) * s.HW, s.HW, T(1), acc + g * s.Og * s.Cg, s.Cg);
        if (grad_bias)
          for (std::int64_t o = 0; o < s.Og; ++o)
            bacc[g * s.Og + o] += run_sum(gout + o * s.HW, s.HW);
      }
    }
  });
  sum_slots<T>(ws, plan.acc, p.O * s.Cg, grad_weight);
  if (grad_bias) sum_slots<double>(ws, plan.bias, p.O, grad_bias);
}

// Only float and double take this path (16-bit types widen through im2col instead).
#define FRUGAL_INSTANTIATE_POINTWISE(T)                                                            \
  template Layout pointwise_forward_layout<T>(const Conv2dParams&);                                \
  template Layout pointwise_backward_weight_layout<T>(const Conv2dParams&);                        \
  template void pointwise_forward<T>(const Conv2dParams&, const T*, const T*, const T*, T*, void*, \
                                     std::size_t);                                                 \
  template void pointwise_backward_input<T>(const Conv2dParams&, const T*, const T*, T*);          \
  template void pointwise_backward_weight<T>(const Conv2dParams&, const T*, const T*, T*, T*,      \
                                             void*, std::size_t);
FRUGAL_INSTANTIATE_POINTWISE(float)
FRUGAL_INSTANTIATE_POINTWISE(double)
#undef FRUGAL_INSTANTIATE_POINTWISE

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail
