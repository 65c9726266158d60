// Elementwise ops with NumPy broadcasting and PyTorch's type promotion: arithmetic,
// activations, comparisons, where, clamp, their scalar overloads and in-place forms.
// Each records its backward beside its forward in elementwise.cpp.
#pragma once

#include <optional>

#include "engine/tensor.h"

namespace frugal {

// The dtype of an op on a and b: PyTorch's promotion, where a 0-dim tensor does not widen a
// dimensioned one of the same category (float32 tensor * float64 0-dim = float32).
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, Scalar b);

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = 1);
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha = 1);
Tensor sub(const Tensor& a, Scalar b);
Tensor rsub(const Tensor& a, Scalar b);  // b - a
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, Scalar b);
// True division: integer inputs give float32.
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, Scalar b);
Tensor rdiv(const Tensor& a, Scalar b);  // b / a
Tensor pow(const Tensor& a, Scalar exponent);

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor gelu(const Tensor& x);  // exact (erf) form, PyTorch's default
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);

// Comparisons give bool tensors and have no gradient.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, Scalar b);

// condition ? a : b, all three broadcast together; condition must be bool.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

// The fused backward formulas of the activations (also used by nn layers). They record no
// history themselves: frugal computes first-order gradients only.
Tensor relu_backward(const Tensor& grad, const Tensor& output);
Tensor sigmoid_backward(const Tensor& grad, const Tensor& output);
Tensor tanh_backward(const Tensor& grad, const Tensor& output);
Tensor gelu_backward(const Tensor& grad, const Tensor& input);

}  // namespace frugal
