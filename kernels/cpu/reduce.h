// Reductions over any set of dims of a strided input of up to 8 dims: sum, mean, amax/amin,
// var, and the index reductions argmax/argmin along one dim. Outputs are contiguous over the
// kept dims in their original order (keepdim only changes the shape, not the data).
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cpu {

inline constexpr int kMaxReduceDims = 8;

// A strided view: sizes and strides (in elements, not bytes), outermost dim first.
struct StridedDims {
  int ndim = 0;  // 0 is a single element
  std::int64_t sizes[kMaxReduceDims] = {};
  std::int64_t strides[kMaxReduceDims] = {};
};

// The row-major contiguous view of `sizes`.
StridedDims contiguous_dims(int ndim, const std::int64_t* sizes);

// The dims to reduce, as bits (bit d set: dim d is reduced). 0 reduces nothing (a copy).
inline constexpr std::uint32_t dim_bit(int dim) { return 1u << dim; }

// A sum's element type, like PyTorch: integers and bool sum into int64.
template <class T>
struct sum_type {
  using type = T;
};
template <>
struct sum_type<bool> {
  using type = std::int64_t;
};
template <>
struct sum_type<std::uint8_t> {
  using type = std::int64_t;
};
template <>
struct sum_type<std::int32_t> {
  using type = std::int64_t;
};
template <class T>
using sum_t = typename sum_type<T>::type;

// Every reduction throws frugal::Error for a bad StridedDims, a mask naming dims past ndim,
// or a dim out of range. Reducing over zero elements gives sum 0 and mean/var NaN; amax,
// amin and the index reductions throw there, as PyTorch does.

// T: float, double, Half, BFloat16, int32, int64, uint8, bool. Floating sums accumulate in
// double; integer sums in int64.
template <class T>
void sum(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, sum_t<T>* out);

// T: float, double, Half, BFloat16.
template <class T>
void mean(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, T* out);

// Largest / smallest value; a NaN anywhere in the reduced set gives NaN. T: all types above.
template <class T>
void amax(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, T* out);
template <class T>
void amin(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, T* out);

// Index along `dim` of the largest / smallest value: the first one on ties, the first NaN
// when there is one. For PyTorch's flattened argmax (no dim), pass a 1-d contiguous view.
// T: all types above.
template <class T>
void argmax(const T* in, const StridedDims& in_dims, int dim, std::int64_t* out);
template <class T>
void argmin(const T* in, const StridedDims& in_dims, int dim, std::int64_t* out);

// torch.max(x, dim) / torch.min(x, dim): values and indices in one pass. T: all types above.
template <class T>
void max_with_indices(const T* in, const StridedDims& in_dims, int dim, T* values,
                      std::int64_t* indices);
template <class T>
void min_with_indices(const T* in, const StridedDims& in_dims, int dim, T* values,
                      std::int64_t* indices);

// Variance: sum((x - mean)^2) / max(0, n - correction); correction 1 is Bessel's (unbiased).
// Two-pass in double. mean_out, when not null, receives the means (torch.var_mean).
// T: float, double, Half, BFloat16.
template <class T>
void var(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, double correction,
         T* out, T* mean_out = nullptr);

}  // namespace frugal::kernels::cpu
