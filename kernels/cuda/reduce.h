// The CUDA reductions, mirroring kernels/cpu/reduce.h (same names, templates, parameters and
// semantics) on device pointers: sum, mean, amax/amin, var and the index reductions.
#pragma once

#include <cstdint>

#include "common/half.h"
#include "kernels/cpu/reduce.h"

namespace frugal::kernels::cuda {

using cpu::contiguous_dims;
using cpu::dim_bit;
using cpu::kMaxReduceDims;
using cpu::StridedDims;
using cpu::sum_t;

// `in` and every output are device pointers; StridedDims stays on the host. Errors (a bad
// view, mask or dim; amax/amin/arg reductions over zero elements) are thrown before anything
// is launched. Everything runs asynchronously on the current stream, deterministically (the
// launch shape depends on the sizes alone, and no float atomics are used). A reduction that
// splits a long reduced set takes a temporary workspace from the device's caching allocator.

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
// when there is one. T: all types above.
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

// Variance: sum((x - mean)^2) / max(0, n - correction), in double (shifted sums per thread,
// merged with Chan's formula). mean_out, when not null, receives the means.
// T: float, double, Half, BFloat16.
template <class T>
void var(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, double correction,
         T* out, T* mean_out = nullptr);

}  // namespace frugal::kernels::cuda
