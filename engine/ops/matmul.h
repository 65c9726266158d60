// Matrix products: mm, bmm, matmul (NumPy semantics, batch dims broadcast) and linear, on
// Eigen's GEMM. Transposed operands are passed to the GEMM as such, never copied.
#pragma once

#include <optional>

#include "engine/tensor.h"

namespace frugal {

// [n, m] x [m, p] -> [n, p].
Tensor mm(const Tensor& a, const Tensor& b);
// [B, n, m] x [B, m, p] -> [B, n, p].
Tensor bmm(const Tensor& a, const Tensor& b);
// torch.matmul: 1-d operands are vectors, batch dims (all but the last two) broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x W^T + b for x [..., in], weight [out, in], bias [out] (or undefined).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

}  // namespace frugal
