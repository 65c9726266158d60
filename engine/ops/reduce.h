// Reductions over dims (with keepdim), and softmax / log_softmax, with their backward.
#pragma once

#include "engine/tensor.h"

namespace frugal {

// Sum over every element, or over `dims`. Integer and bool inputs sum in int64.
Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim = false);
// Variance with Bessel's correction when unbiased (PyTorch's default).
Tensor var(const Tensor& x, IntArrayRef dims, bool unbiased = true, bool keepdim = false);
// Largest/smallest element (gradient flows to every position holding it, shared evenly).
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// Values and int64 indices along `dim` (the first occurrence of ties).
struct ValuesIndices {
  Tensor values;
  Tensor indices;
};
ValuesIndices max(const Tensor& x, std::int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x, std::int64_t dim, bool keepdim = false);

Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax(const Tensor& x, std::int64_t dim);

}  // namespace frugal
