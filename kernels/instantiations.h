// The element types each kernel is compiled for, as explicit-instantiation lists: used by the
// CPU kernels (every level's copy, and isa_dispatch.cpp) and the CUDA kernels, whose entry
// points have the same signatures, so that all of them always agree. Each list is a macro
// over T, applied to a type list in the kernel's own namespace:
// FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_GEMM).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/half.h"

#define FRUGAL_FLOAT_TYPES(X) X(float) X(double) X(Half) X(BFloat16)

#define FRUGAL_INSTANTIATE_GEMM(T)                                                               \
  template void gemm<T>(bool, bool, std::int64_t, std::int64_t, std::int64_t, T, const T*,       \
                        std::int64_t, const T*, std::int64_t, T, T*, std::int64_t);              \
  template void gemm_batched<T>(bool, bool, std::int64_t, std::int64_t, std::int64_t,            \
                                std::int64_t, T, const T*, std::int64_t, std::int64_t, const T*, \
                                std::int64_t, std::int64_t, T, T*, std::int64_t, std::int64_t);

// The three directions of one convolution algorithm named `algo`: algo_forward,
// algo_backward_input, algo_backward_weight (conv2d itself, and the CPU's paths through
// FRUGAL_INSTANTIATE_CONV_PATH in kernels/cpu/conv_internal.h).
#define FRUGAL_INSTANTIATE_CONV_DIRECTIONS(algo, T)                                               \
  template void algo##_forward<T>(const Conv2dParams&, const T*, const T*, const T*, T*, void*,   \
                                  std::size_t);                                                   \
  template void algo##_backward_input<T>(const Conv2dParams&, const T*, const T*, T*, void*,      \
                                         std::size_t);                                            \
  template void algo##_backward_weight<T>(const Conv2dParams&, const T*, const T*, T*, T*, void*, \
                                          std::size_t);

// The public conv2d entry points that both backends have: the workspace queries and the three
// directions (each backend adds its own: the CPU's path choice, CUDA's workspace fallbacks).
#define FRUGAL_INSTANTIATE_CONV(T)                                                          \
  template std::size_t conv2d_forward_workspace_bytes<T>(const Conv2dParams&, int);         \
  template std::size_t conv2d_backward_input_workspace_bytes<T>(const Conv2dParams&, int);  \
  template std::size_t conv2d_backward_weight_workspace_bytes<T>(const Conv2dParams&, int); \
  FRUGAL_INSTANTIATE_CONV_DIRECTIONS(conv2d, T)
// The CPU's: plus the choice of path (conv.cpp in every level, and isa_dispatch.cpp).
#define FRUGAL_INSTANTIATE_CPU_CONV(T)                   \
  template ConvPath conv2d_path<T>(const Conv2dParams&); \
  FRUGAL_INSTANTIATE_CONV(T)

#define FRUGAL_INSTANTIATE_BATCH_NORM(T)                                                           \
  template void batch_norm_forward_train<T>(const T*, const compute_t<T>*, const compute_t<T>*,    \
                                            compute_t<T>*, compute_t<T>*, std::int64_t,            \
                                            std::int64_t, std::int64_t, double, double, T*,        \
                                            compute_t<T>*, compute_t<T>*, bool);                   \
  template void batch_norm_forward_eval<T>(const T*, const compute_t<T>*, const compute_t<T>*,     \
                                           const compute_t<T>*, const compute_t<T>*, std::int64_t, \
                                           std::int64_t, std::int64_t, double, T*, bool);          \
  template void batch_norm_backward_train<T>(                                                      \
      const T*, const T*, const compute_t<T>*, const compute_t<T>*, const compute_t<T>*,           \
      std::int64_t, std::int64_t, std::int64_t, T*, compute_t<T>*, compute_t<T>*);                 \
  template void batch_norm_backward_eval<T>(                                                       \
      const T*, const T*, const compute_t<T>*, const compute_t<T>*, const compute_t<T>*, double,   \
      std::int64_t, std::int64_t, std::int64_t, T*, compute_t<T>*, compute_t<T>*);

#define FRUGAL_INSTANTIATE_MAX_POOL(T)                                                             \
  template void max_pool2d_forward<T>(const Pool2dParams&, const T*, T*, std::int64_t*);           \
  template void max_pool2d_backward<T>(const Pool2dParams&, const T*, const std::int64_t*, T*);    \
  template void max_pool2d_forward_compact<T>(const Pool2dParams&, const T*, T*, std::uint8_t*);   \
  template void max_pool2d_backward_compact<T>(const Pool2dParams&, const T*, const std::uint8_t*, \
                                               T*);

#define FRUGAL_INSTANTIATE_AVG_POOL(T)                                                     \
  template void avg_pool2d_forward<T>(const Pool2dParams&, const T*, T*);                  \
  template void avg_pool2d_backward<T>(const Pool2dParams&, const T*, T*);                 \
  template void adaptive_avg_pool2d_forward<T>(const AdaptivePool2dParams&, const T*, T*); \
  template void adaptive_avg_pool2d_backward<T>(const AdaptivePool2dParams&, const T*, T*);

#define FRUGAL_INSTANTIATE_POOL(T) FRUGAL_INSTANTIATE_MAX_POOL(T) FRUGAL_INSTANTIATE_AVG_POOL(T)

#define FRUGAL_INSTANTIATE_LOSS(T)                                                               \
  template void nll_loss_forward<T>(const T*, const std::int64_t*, const T*, std::int64_t,       \
                                    std::int64_t, Reduction, std::int64_t, T*, T*);              \
  template void nll_loss_backward<T>(const T*, const std::int64_t*, const T*, std::int64_t,      \
                                     std::int64_t, Reduction, std::int64_t, const T*, T*);       \
  template void cross_entropy_forward<T>(const T*, const std::int64_t*, const T*, std::int64_t,  \
                                         std::int64_t, Reduction, std::int64_t, T*, T*, T*, T*); \
  template void cross_entropy_backward<T>(const T*, const T*, const T*, const std::int64_t*,     \
                                          const T*, std::int64_t, std::int64_t, Reduction,       \
                                          std::int64_t, const T*, T*);

#define FRUGAL_INSTANTIATE_RANDOM(T)                                                        \
  template void uniform<T>(T*, std::int64_t, std::uint64_t, std::uint64_t, double, double); \
  template void normal<T>(T*, std::int64_t, std::uint64_t, std::uint64_t, double, double);

#define FRUGAL_INSTANTIATE_SOFTMAX(T)                                                       \
  template void softmax<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t);         \
  template void log_softmax<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t);     \
  template void softmax_backward<T>(const T*, const T*, T*, std::int64_t, std::int64_t,     \
                                    std::int64_t);                                          \
  template void log_softmax_backward<T>(const T*, const T*, T*, std::int64_t, std::int64_t, \
                                        std::int64_t);

#define FRUGAL_INSTANTIATE_REDUCE_ANY(T)                                                   \
  template void sum<T>(const T*, const StridedDims&, std::uint32_t, sum_t<T>*);            \
  template void amax<T>(const T*, const StridedDims&, std::uint32_t, T*);                  \
  template void amin<T>(const T*, const StridedDims&, std::uint32_t, T*);                  \
  template void argmax<T>(const T*, const StridedDims&, int, std::int64_t*);               \
  template void argmin<T>(const T*, const StridedDims&, int, std::int64_t*);               \
  template void max_with_indices<T>(const T*, const StridedDims&, int, T*, std::int64_t*); \
  template void min_with_indices<T>(const T*, const StridedDims&, int, T*, std::int64_t*);

#define FRUGAL_INSTANTIATE_REDUCE_FLOATING(T)                             \
  template void mean<T>(const T*, const StridedDims&, std::uint32_t, T*); \
  template void var<T>(const T*, const StridedDims&, std::uint32_t, double, T*, T*);

#define FRUGAL_NUMERIC_TYPES(X) \
  X(float) X(double) X(Half) X(BFloat16) X(std::int32_t) X(std::int64_t) X(std::uint8_t)
#define FRUGAL_ALL_TYPES(X) FRUGAL_NUMERIC_TYPES(X) X(bool)

#define FRUGAL_INSTANTIATE_MATH(T)                                     \
  template void unary<T>(UnaryOp, const StridedLoop&, double, double); \
  template void binary<T>(BinaryOp, const StridedLoop&, double, double);

#define FRUGAL_INSTANTIATE_ANY(T)                          \
  template void compare<T>(CompareOp, const StridedLoop&); \
  template void where<T>(const StridedLoop&);              \
  template void fill<T>(const StridedLoop&, T);

#define FRUGAL_CAST_PAIR(Dst, Src) template void cast<Dst, Src>(const StridedLoop&);
#define FRUGAL_CASTS_TO(Dst)          \
  FRUGAL_CAST_PAIR(Dst, float)        \
  FRUGAL_CAST_PAIR(Dst, double)       \
  FRUGAL_CAST_PAIR(Dst, Half)         \
  FRUGAL_CAST_PAIR(Dst, BFloat16)     \
  FRUGAL_CAST_PAIR(Dst, std::int32_t) \
  FRUGAL_CAST_PAIR(Dst, std::int64_t) \
  FRUGAL_CAST_PAIR(Dst, std::uint8_t) \
  FRUGAL_CAST_PAIR(Dst, bool)

#define FRUGAL_INSTANTIATE_ELEMENTWISE          \
  FRUGAL_NUMERIC_TYPES(FRUGAL_INSTANTIATE_MATH) \
  FRUGAL_ALL_TYPES(FRUGAL_INSTANTIATE_ANY)      \
  FRUGAL_ALL_TYPES(FRUGAL_CASTS_TO)
