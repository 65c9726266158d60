// The public entry points of the hot kernels: each picks, on every call, the copy compiled for
// the CPU's instruction-set level (cpu_isa()) and runs it. The copies live in
// frugal::kernels::cpu::{baseline, avx2, avx512, avx512_bf16} (kernels/cpu/isa_variant.h).
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/flat_correlate_bf16.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/pool.h"
#include "kernels/cpu/quantized_gemm.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu {

namespace {

// The copy for the active level. A family compiled only up to avx512 passes that copy again
// for avx512_bf16. Where the build has one copy (FRUGAL_NATIVE, or not x86-64) only the
// baseline namespace is defined, and the others are never named.
template <class F>
F* pick(F* baseline_fn, F* avx2_fn, F* avx512_fn, F* avx512_bf16_fn) {
#if FRUGAL_CPU_VARIANTS
  switch (cpu_isa()) {
    case CpuIsa::avx512_bf16:
      return avx512_bf16_fn;
    case CpuIsa::avx512:
      return avx512_fn;
    case CpuIsa::avx2:
      return avx2_fn;
    case CpuIsa::baseline:
      break;
  }
#endif
  return baseline_fn;
}

}  // namespace

#if FRUGAL_CPU_VARIANTS
#define FRUGAL_PICK4(...) \
  pick(&baseline::__VA_ARGS__, &avx2::__VA_ARGS__, &avx512::__VA_ARGS__, &avx512_bf16::__VA_ARGS__)
#define FRUGAL_PICK3(...) \
  pick(&baseline::__VA_ARGS__, &avx2::__VA_ARGS__, &avx512::__VA_ARGS__, &avx512::__VA_ARGS__)
#else
#define FRUGAL_PICK4(...) (&baseline::__VA_ARGS__)
#define FRUGAL_PICK3(...) (&baseline::__VA_ARGS__)
#endif

// The copies' declarations: the same signatures as the public headers, once per level.
#define FRUGAL_DECLARE_COPIES(level)                                                               \
  namespace level {                                                                                \
  template <class T>                                                                               \
  void gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, T, const T*, std::int64_t,       \
            const T*, std::int64_t, T, T*, std::int64_t);                                          \
  template <class T>                                                                               \
  void gemm_batched(bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, T,         \
                    const T*, std::int64_t, std::int64_t, const T*, std::int64_t, std::int64_t, T, \
                    T*, std::int64_t, std::int64_t);                                               \
  void gemm_bf16_to_float(bool, bool, std::int64_t, std::int64_t, std::int64_t, float,             \
                          const BFloat16*, std::int64_t, const BFloat16*, std::int64_t, float,     \
                          float*, std::int64_t);                                                   \
  void flat_correlate_bf16(std::int64_t, std::int64_t, std::int64_t, const std::int64_t*,          \
                           const std::uint32_t*, const std::uint32_t*, std::int64_t, std::int64_t, \
                           float*, std::int64_t);                                                  \
  void flat_correlate_bf16_weight_grad(std::int64_t, std::int64_t, const std::int64_t*,           \
                                       const BFloat16*, std::int64_t, std::int64_t,                \
                                       const std::uint32_t*, std::int64_t, std::int64_t,           \
                                       std::int64_t, const PositionRows&, float*);                 \
  void gemm_u8s8s32(std::int64_t, std::int64_t, std::int64_t, const std::uint8_t*, std::int64_t,   \
                    const std::int8_t*, std::int64_t, std::int32_t*, std::int64_t);                \
  std::int64_t quantize_rows_symmetric_s8(const float*, std::int64_t, std::int64_t, std::int8_t*,  \
                                          float*, std::int32_t*);                                  \
  std::int64_t quantize_rows_asymmetric_u8(const float*, std::int64_t, std::int64_t,               \
                                           std::uint8_t*, float*, std::int32_t*);                  \
  void quantized_linear_u8s8(std::int64_t, std::int64_t, std::int64_t, const std::uint8_t*,        \
                             std::int64_t, const std::int8_t*, std::int64_t, const float*,         \
                             const std::int32_t*, const float*, const std::int32_t*, const float*, \
                             float*, std::int64_t);                                                \
  template <class T>                                                                               \
  ConvPath conv2d_path(const Conv2dParams&);                                                       \
  template <class T>                                                                               \
  std::size_t conv2d_forward_workspace_bytes(const Conv2dParams&, int);                            \
  template <class T>                                                                               \
  std::size_t conv2d_backward_input_workspace_bytes(const Conv2dParams&, int);                     \
  template <class T>                                                                               \
  std::size_t conv2d_backward_weight_workspace_bytes(const Conv2dParams&, int);                    \
  template <class T>                                                                               \
  void conv2d_forward(const Conv2dParams&, const T*, const T*, const T*, T*, void*, std::size_t);  \
  template <class T>                                                                               \
  void conv2d_backward_input(const Conv2dParams&, const T*, const T*, T*, void*, std::size_t);     \
  template <class T>                                                                               \
  void conv2d_backward_weight(const Conv2dParams&, const T*, const T*, T*, T*, void*,              \
                              std::size_t);                                                        \
  template <class T>                                                                               \
  void batch_norm_forward_train(const T*, const compute_t<T>*, const compute_t<T>*, compute_t<T>*, \
                                compute_t<T>*, std::int64_t, std::int64_t, std::int64_t, double,   \
                                double, T*, compute_t<T>*, compute_t<T>*, bool);                   \
  template <class T>                                                                               \
  void batch_norm_forward_eval(const T*, const compute_t<T>*, const compute_t<T>*,                 \
                               const compute_t<T>*, const compute_t<T>*, std::int64_t,             \
                               std::int64_t, std::int64_t, double, T*, bool);                      \
  template <class T>                                                                               \
  void batch_norm_backward_train(const T*, const T*, const compute_t<T>*, const compute_t<T>*,     \
                                 const compute_t<T>*, std::int64_t, std::int64_t, std::int64_t,    \
                                 T*, compute_t<T>*, compute_t<T>*);                                \
  template <class T>                                                                               \
  void batch_norm_backward_eval(const T*, const T*, const compute_t<T>*, const compute_t<T>*,      \
                                const compute_t<T>*, double, std::int64_t, std::int64_t,           \
                                std::int64_t, T*, compute_t<T>*, compute_t<T>*);                   \
  template <class T>                                                                               \
  void unary(UnaryOp, const StridedLoop&, double, double);                                         \
  template <class T>                                                                               \
  void binary(BinaryOp, const StridedLoop&, double, double);                                       \
  template <class T>                                                                               \
  void compare(CompareOp, const StridedLoop&);                                                     \
  template <class T>                                                                               \
  void where(const StridedLoop&);                                                                  \
  template <class T>                                                                               \
  void fill(const StridedLoop&, T);                                                                \
  template <class Dst, class Src>                                                                  \
  void cast(const StridedLoop&);                                                                   \
  template <class T>                                                                               \
  void max_pool2d_forward(const Pool2dParams&, const T*, T*, std::int64_t*);                       \
  template <class T>                                                                               \
  void max_pool2d_backward(const Pool2dParams&, const T*, const std::int64_t*, T*);                \
  template <class T>                                                                               \
  void max_pool2d_forward_compact(const Pool2dParams&, const T*, T*, std::uint8_t*);               \
  template <class T>                                                                               \
  void max_pool2d_backward_compact(const Pool2dParams&, const T*, const std::uint8_t*, T*);        \
  template <class T>                                                                               \
  void avg_pool2d_forward(const Pool2dParams&, const T*, T*);                                      \
  template <class T>                                                                               \
  void avg_pool2d_backward(const Pool2dParams&, const T*, T*);                                     \
  template <class T>                                                                               \
  void adaptive_avg_pool2d_forward(const AdaptivePool2dParams&, const T*, T*);                     \
  template <class T>                                                                               \
  void adaptive_avg_pool2d_backward(const AdaptivePool2dParams&, const T*, T*);                    \
  }
FRUGAL_DECLARE_COPIES(baseline)
FRUGAL_DECLARE_COPIES(avx2)
FRUGAL_DECLARE_COPIES(avx512)
FRUGAL_DECLARE_COPIES(avx512_bf16)
#undef FRUGAL_DECLARE_COPIES

// ---- GEMM (gemm.cpp: up to avx512_bf16, whose bfloat16 products use vdpbf16ps) ----

template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
          const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
          std::int64_t ldc) {
  FRUGAL_PICK4(gemm<T>)(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, std::int64_t batch, std::int64_t m, std::int64_t n,
                  std::int64_t k, T alpha, const T* a, std::int64_t lda, std::int64_t stride_a,
                  const T* b, std::int64_t ldb, std::int64_t stride_b, T beta, T* c,
                  std::int64_t ldc, std::int64_t stride_c) {
  FRUGAL_PICK4(gemm_batched<T>)
  (trans_a, trans_b, batch, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
   stride_c);
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_GEMM)

void gemm_bf16_to_float(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                        float alpha, const BFloat16* a, std::int64_t lda, const BFloat16* b,
                        std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  FRUGAL_PICK4(gemm_bf16_to_float)(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool flat_correlate_bf16_available() {
#if FRUGAL_CPU_VARIANTS
  return cpu_isa() == CpuIsa::avx512_bf16;
#elif defined(__AVX512BF16__)
  return true;  // the one copy is built for this machine (FRUGAL_NATIVE) and has it
#else
  return false;
#endif
}

void flat_correlate_bf16(std::int64_t O, std::int64_t C, std::int64_t taps,
                         const std::int64_t* offsets, const std::uint32_t* packed_weights,
                         const std::uint32_t* in, std::int64_t pair_stride, std::int64_t Q,
                         float* out, std::int64_t out_stride) {
  FRUGAL_PICK4(flat_correlate_bf16)
  (O, C, taps, offsets, packed_weights, in, pair_stride, Q, out, out_stride);
}

void flat_correlate_bf16_weight_grad(std::int64_t O, std::int64_t C, const std::int64_t* offsets,
                                     const BFloat16* gout, std::int64_t gout_stride,
                                     std::int64_t gout_sample_stride, const std::uint32_t* pairs,
                                     std::int64_t channel_stride, std::int64_t in_sample_stride,
                                     std::int64_t samples, const PositionRows& rows, float* dw) {
  FRUGAL_PICK4(flat_correlate_bf16_weight_grad)
  (O, C, offsets, gout, gout_stride, gout_sample_stride, pairs, channel_stride, in_sample_stride,
   samples, rows, dw);
}

// ---- int8 GEMM (quantized_gemm.cpp: up to avx512_bf16, which carries VNNI's vpdpbusd) ----

void gemm_u8s8s32(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                  std::int64_t lda, const std::int8_t* b, std::int64_t ldb, std::int32_t* c,
                  std::int64_t ldc) {
  FRUGAL_PICK4(gemm_u8s8s32)(m, n, k, a, lda, b, ldb, c, ldc);
}

std::int64_t quantize_rows_symmetric_s8(const float* x, std::int64_t rows, std::int64_t cols,
                                        std::int8_t* q, float* scale, std::int32_t* row_sum) {
  return FRUGAL_PICK4(quantize_rows_symmetric_s8)(x, rows, cols, q, scale, row_sum);
}

std::int64_t quantize_rows_asymmetric_u8(const float* x, std::int64_t rows, std::int64_t cols,
                                         std::uint8_t* q, float* scale, std::int32_t* zero_point) {
  return FRUGAL_PICK4(quantize_rows_asymmetric_u8)(x, rows, cols, q, scale, zero_point);
}

void quantized_linear_u8s8(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint8_t* a,
                           std::int64_t lda, const std::int8_t* b, std::int64_t ldb,
                           const float* x_scale, const std::int32_t* x_zero_point,
                           const float* w_scale, const std::int32_t* w_sum, const float* bias,
                           float* y, std::int64_t ldy) {
  FRUGAL_PICK4(quantized_linear_u8s8)
  (m, n, k, a, lda, b, ldb, x_scale, x_zero_point, w_scale, w_sum, bias, y, ldy);
}

// ---- Convolution (conv*.cpp and flat_correlate.cpp: up to avx512) ----

template <class T>
ConvPath conv2d_path(const Conv2dParams& p) {
  return FRUGAL_PICK3(conv2d_path<T>)(p);
}

// The workspace queries go to the same level's copy as the call they size: the AVX-512 copy's
// register-blocked paths lay out their scratch differently.
template <class T>
std::size_t conv2d_forward_workspace_bytes(const Conv2dParams& p, int threads) {
  return FRUGAL_PICK3(conv2d_forward_workspace_bytes<T>)(p, threads);
}
template <class T>
std::size_t conv2d_backward_input_workspace_bytes(const Conv2dParams& p, int threads) {
  return FRUGAL_PICK3(conv2d_backward_input_workspace_bytes<T>)(p, threads);
}
template <class T>
std::size_t conv2d_backward_weight_workspace_bytes(const Conv2dParams& p, int threads) {
  return FRUGAL_PICK3(conv2d_backward_weight_workspace_bytes<T>)(p, threads);
}

template <class T>
void conv2d_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                    T* output, void* workspace, std::size_t workspace_bytes) {
  FRUGAL_PICK3(conv2d_forward<T>)(p, input, weight, bias, output, workspace, workspace_bytes);
}

template <class T>
void conv2d_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                           T* grad_input, void* workspace, std::size_t workspace_bytes) {
  FRUGAL_PICK3(conv2d_backward_input<T>)
  (p, grad_output, weight, grad_input, workspace, workspace_bytes);
}

template <class T>
void conv2d_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                            T* grad_weight, T* grad_bias, void* workspace,
                            std::size_t workspace_bytes) {
  FRUGAL_PICK3(conv2d_backward_weight<T>)
  (p, grad_output, input, grad_weight, grad_bias, workspace, workspace_bytes);
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_CPU_CONV)

// ---- Batch normalization (batch_norm.cpp: up to avx512) ----

template <class T>
void batch_norm_forward_train(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                              compute_t<T>* running_mean, compute_t<T>* running_var, std::int64_t n,
                              std::int64_t c, std::int64_t hw, double momentum, double eps, T* y,
                              compute_t<T>* save_mean, compute_t<T>* save_invstd, bool relu) {
  FRUGAL_PICK3(batch_norm_forward_train<T>)
  (x, weight, bias, running_mean, running_var, n, c, hw, momentum, eps, y, save_mean, save_invstd,
   relu);
}

template <class T>
void batch_norm_forward_eval(const T* x, const compute_t<T>* weight, const compute_t<T>* bias,
                             const compute_t<T>* running_mean, const compute_t<T>* running_var,
                             std::int64_t n, std::int64_t c, std::int64_t hw, double eps, T* y,
                             bool relu) {
  FRUGAL_PICK3(batch_norm_forward_eval<T>)
  (x, weight, bias, running_mean, running_var, n, c, hw, eps, y, relu);
}

template <class T>
void batch_norm_backward_train(const T* grad_y, const T* x, const compute_t<T>* weight,
                               const compute_t<T>* save_mean, const compute_t<T>* save_invstd,
                               std::int64_t n, std::int64_t c, std::int64_t hw, T* grad_x,
                               compute_t<T>* grad_weight, compute_t<T>* grad_bias) {
  FRUGAL_PICK3(batch_norm_backward_train<T>)
  (grad_y, x, weight, save_mean, save_invstd, n, c, hw, grad_x, grad_weight, grad_bias);
}

template <class T>
void batch_norm_backward_eval(const T* grad_y, const T* x, const compute_t<T>* weight,
                              const compute_t<T>* running_mean, const compute_t<T>* running_var,
                              double eps, std::int64_t n, std::int64_t c, std::int64_t hw,
                              T* grad_x, compute_t<T>* grad_weight, compute_t<T>* grad_bias) {
  FRUGAL_PICK3(batch_norm_backward_eval<T>)
  (grad_y, x, weight, running_mean, running_var, eps, n, c, hw, grad_x, grad_weight, grad_bias);
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_BATCH_NORM)

// ---- Elementwise ops and casts (elementwise.cpp: up to avx512) ----

template <class T>
void unary(UnaryOp op, const StridedLoop& loop, double lo, double hi) {
  FRUGAL_PICK3(unary<T>)(op, loop, lo, hi);
}
template <class T>
void binary(BinaryOp op, const StridedLoop& loop, double alpha, double beta) {
  FRUGAL_PICK3(binary<T>)(op, loop, alpha, beta);
}
template <class T>
void compare(CompareOp op, const StridedLoop& loop) {
  FRUGAL_PICK3(compare<T>)(op, loop);
}
template <class T>
void where(const StridedLoop& loop) {
  FRUGAL_PICK3(where<T>)(loop);
}
template <class T>
void fill(const StridedLoop& loop, T value) {
  FRUGAL_PICK3(fill<T>)(loop, value);
}
template <class Dst, class Src>
void cast(const StridedLoop& loop) {
  FRUGAL_PICK3(cast<Dst, Src>)(loop);
}

FRUGAL_INSTANTIATE_ELEMENTWISE

// ---- Pooling (pool.cpp: up to avx512) ----

template <class T>
void max_pool2d_forward(const Pool2dParams& p, const T* input, T* output, std::int64_t* indices) {
  FRUGAL_PICK3(max_pool2d_forward<T>)(p, input, output, indices);
}
template <class T>
void max_pool2d_backward(const Pool2dParams& p, const T* grad_output, const std::int64_t* indices,
                         T* grad_input) {
  FRUGAL_PICK3(max_pool2d_backward<T>)(p, grad_output, indices, grad_input);
}
template <class T>
void max_pool2d_forward_compact(const Pool2dParams& p, const T* input, T* output,
                                std::uint8_t* window_index) {
  FRUGAL_PICK3(max_pool2d_forward_compact<T>)(p, input, output, window_index);
}
template <class T>
void max_pool2d_backward_compact(const Pool2dParams& p, const T* grad_output,
                                 const std::uint8_t* window_index, T* grad_input) {
  FRUGAL_PICK3(max_pool2d_backward_compact<T>)(p, grad_output, window_index, grad_input);
}
template <class T>
void avg_pool2d_forward(const Pool2dParams& p, const T* input, T* output) {
  FRUGAL_PICK3(avg_pool2d_forward<T>)(p, input, output);
}
template <class T>
void avg_pool2d_backward(const Pool2dParams& p, const T* grad_output, T* grad_input) {
  FRUGAL_PICK3(avg_pool2d_backward<T>)(p, grad_output, grad_input);
}
template <class T>
void adaptive_avg_pool2d_forward(const AdaptivePool2dParams& p, const T* input, T* output) {
  FRUGAL_PICK3(adaptive_avg_pool2d_forward<T>)(p, input, output);
}
template <class T>
void adaptive_avg_pool2d_backward(const AdaptivePool2dParams& p, const T* grad_output,
                                  T* grad_input) {
  FRUGAL_PICK3(adaptive_avg_pool2d_backward<T>)(p, grad_output, grad_input);
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_POOL)

}  // namespace frugal::kernels::cpu
