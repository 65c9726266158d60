// Kernel launching for elementwise ops, shared by arithmetic, activations and in-place ops.
#include "engine/ops/elementwise_common.h"

#include "common/error.h"
#include "engine/dispatch.h"
#include "engine/ops/copy.h"
#include "engine/ops/factory.h"
#include "engine/ops/iterator.h"
#include "engine/ops/kernels.h"
#include "engine/ops/shape.h"

namespace frugal::detail {

using kernels::cpu::BinaryOp;
using kernels::cpu::UnaryOp;

Tensor cast_for_kernel(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = empty(t.sizes(), t.options().dtype(dtype));
  copy_data(out, t);
  return out;
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  FRUGAL_CHECK(a.device() == b.device(), std::string(op) +
                                             ": expected all tensors on one device, got " +
                                             a.device().str() + " and " + b.device().str());
}

Tensor binary_kernel(BinaryOp op, const Tensor& a, const Tensor& b, ScalarType dtype,
                     const char* name, double alpha, double beta) {
  check_same_device(a, b, name);
  Tensor out = empty(broadcast_shapes(a.sizes(), b.sizes(), name), a.options().dtype(dtype));
  const Tensor ac = cast_for_kernel(a, dtype), bc = cast_for_kernel(b, dtype);
  const auto loop = LoopBuilder(out).input(ac).input(bc).build();
  dispatch_numeric(dtype, name, [&]<class T>() {
    FRUGAL_KERNEL(out.device(), binary<T>)(op, loop, alpha, beta);
  });
  return out;
}

Tensor binary_scalar_kernel(BinaryOp op, const Tensor& a, Scalar s, ScalarType dtype,
                            const char* name) {
  Tensor out = empty(a.sizes(), a.options().dtype(dtype));
  const Tensor ac = cast_for_kernel(a, dtype);
  dispatch_numeric(dtype, name, [&]<class T>() {
    const T value = s.to<T>();
    FRUGAL_KERNEL(out.device(), binary<T>)
    (op, LoopBuilder(out).input(ac).scalar(&value, scalar_type_of<T>()).build());
  });
  return out;
}

Tensor unary_kernel(UnaryOp op, const Tensor& x, const char* name, double lo, double hi) {
  Tensor out = empty(x.sizes(), x.options());
  const auto loop = LoopBuilder(out).input(x).build();
  dispatch_numeric(x.dtype(), name, [&]<class T>() {
    FRUGAL_KERNEL(out.device(), unary<T>)(op, loop, lo, hi);
  });
  return out;
}

void binary_kernel_inplace(BinaryOp op, const Tensor& self, const Tensor& other, const char* name,
                           double alpha) {
  check_same_device(self, other, name);
  const DimVector shape = broadcast_shapes(self.sizes(), other.sizes(), name);
  FRUGAL_CHECK(IntArrayRef(shape) == self.sizes(),
               std::string(name) + ": the result of shape " + shape_string(shape) +
                   " does not fit in place into a tensor of shape " + shape_string(self.sizes()));
  FRUGAL_CHECK(!(is_integral(self.dtype(), true) && other.is_floating_point()),
               std::string(name) + ": result type " + dtype_name(other.dtype()) +
                   " cannot be cast to the in-place output's " + dtype_name(self.dtype()));
  const Tensor oc = cast_for_kernel(other, self.dtype());
  const auto loop = LoopBuilder(self).input(self).input(oc).build();
  dispatch_numeric(self.dtype(), name, [&]<class T>() {
    FRUGAL_KERNEL(self.device(), binary<T>)(op, loop, alpha);
  });
}

void binary_scalar_kernel_inplace(BinaryOp op, const Tensor& self, Scalar s, const char* name) {
  FRUGAL_CHECK(!(is_integral(self.dtype(), true) && s.is_floating_point()),
               std::string(name) + ": a floating-point scalar cannot be applied in place to a " +
                   dtype_name(self.dtype()) + " tensor");
  dispatch_numeric(self.dtype(), name, [&]<class T>() {
    const T value = s.to<T>();
    FRUGAL_KERNEL(self.device(), binary<T>)
    (op, LoopBuilder(self).input(self).scalar(&value, scalar_type_of<T>()).build());
  });
}

Tensor GradTarget::operator()(const Tensor& grad) const {
  Tensor g = grad.sizes() == IntArrayRef(sizes) ? grad : sum_to_size(grad, sizes);
  return g.dtype() == dtype ? g : cast_for_kernel(g, dtype);
}

}  // namespace frugal::detail
