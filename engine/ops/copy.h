// Copies and conversions: clone, contiguous, to(dtype), copy_ (broadcasting, converting),
// fill_ and zero_. The Tensor methods of the same names forward here.
#pragma once

#include "engine/tensor.h"

namespace frugal {

Tensor clone(const Tensor& t);
Tensor contiguous(const Tensor& t);
Tensor to_dtype(const Tensor& t, ScalarType dtype);
// Writes src (broadcast to dst's shape, converted to dst's dtype) into dst, without autograd:
// the raw copy under copy_, casts and contiguous().
void copy_data(const Tensor& dst, const Tensor& src);

}  // namespace frugal
