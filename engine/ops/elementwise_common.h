// Internal helpers of the elementwise op files: running a kernel over broadcast operands,
// and reducing a gradient back to the shape and dtype of the input it belongs to.
#pragma once

#include "engine/tensor.h"
#include "kernels/cpu/elementwise.h"

namespace frugal::detail {

// A same-valued tensor of `dtype` (a no-op when it already is): kernel inputs share a type.
Tensor cast_for_kernel(const Tensor& t, ScalarType dtype);

void check_same_device(const Tensor& a, const Tensor& b, const char* op);

// out = a op b over broadcast shapes, computed in `dtype`; no autograd.
Tensor binary_kernel(kernels::cpu::BinaryOp op, const Tensor& a, const Tensor& b, ScalarType dtype,
                     const char* name, double alpha = 1, double beta = 0);
// out = a op s for a scalar s, computed in `dtype`; no autograd.
Tensor binary_scalar_kernel(kernels::cpu::BinaryOp op, const Tensor& a, Scalar s, ScalarType dtype,
                            const char* name);
// out = f(x) in x's dtype; no autograd.
Tensor unary_kernel(kernels::cpu::UnaryOp op, const Tensor& x, const char* name, double lo = 0,
                    double hi = 0);
// In place: self = self op other (other broadcast to self), in self's dtype.
void binary_kernel_inplace(kernels::cpu::BinaryOp op, const Tensor& self, const Tensor& other,
                           const char* name, double alpha = 1);
void binary_scalar_kernel_inplace(kernels::cpu::BinaryOp op, const Tensor& self, Scalar s,
                                  const char* name);

// What a gradient must be reduced to: the input's shape and dtype.
struct GradTarget {
  DimVector sizes;
  ScalarType dtype;
  explicit GradTarget(const Tensor& input) : sizes(input.sizes()), dtype(input.dtype()) {}
  // Sums broadcast dims away and converts; a no-op for a gradient that already fits.
  Tensor operator()(const Tensor& grad) const;
};

}  // namespace frugal::detail
