// In-place arithmetic (add_, sub_, mul_, div_, relu_) — they save memory by writing into an
// existing tensor, bump its version counter, and, when recording history, rebase the
// tensor onto a node whose first input is its previous history.
#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/elementwise_common.h"
#include "engine/ops/iterator.h"
#include "engine/ops/kernels.h"

namespace frugal {

using autograd::InputGrads;
using autograd::save;
using detail::GradTarget;
using kernels::cpu::BinaryOp;

Tensor& Tensor::add_(const Tensor& other, Scalar alpha) {
  const bool records = autograd::needs_grad(*this, other);
  autograd::check_inplace(*this, "add_", records);
  detail::binary_kernel_inplace(BinaryOp::Add, *this, other, "add_", alpha.to_double());
  impl()->storage()->bump_version();
  if (records)
    autograd::rebase(*this, "add_", {other},
                     [to = GradTarget(other), alpha](const Tensor& g, InputGrads& gi) {
                       if (gi.needs(0)) gi[0] = g;
                       if (gi.needs(1))
                         gi[1] = to(alpha.to_double() == 1 ? g : frugal::mul(g, alpha));
                     });
  return *this;
}

Tensor& Tensor::sub_(const Tensor& other, Scalar alpha) {
  return add_(other, alpha.is_integral() ? Scalar(-alpha.to_long()) : Scalar(-alpha.to_double()));
}

Tensor& Tensor::add_(Scalar other) {
  const bool records = autograd::needs_grad(*this);
  autograd::check_inplace(*this, "add_", records);
  detail::binary_scalar_kernel_inplace(BinaryOp::Add, *this, other, "add_");
  impl()->storage()->bump_version();
  if (records)
    autograd::rebase(*this, "add_", {}, [](const Tensor& g, InputGrads& gi) { gi[0] = g; });
  return *this;
}

Tensor& Tensor::mul_(const Tensor& other) {
  const bool records = autograd::needs_grad(*this, other);
  autograd::check_inplace(*this, "mul_", records);
  // other's gradient needs self's value from before the multiplication: keep a copy only
  // when that gradient will be asked for.
  Tensor old_self = records && autograd::requires_grad(other) ? detach().clone() : Tensor();
  detail::binary_kernel_inplace(BinaryOp::Mul, *this, other, "mul_");
  impl()->storage()->bump_version();
  if (records)
    autograd::rebase(*this, "mul_", {other},
                     [to = GradTarget(other), so = save(other, "mul_"), sa = save(old_self, "mul_"),
                      dtype = dtype()](const Tensor& g, InputGrads& gi) {
                       if (gi.needs(0)) gi[0] = frugal::mul(g, so.unpack()).to(dtype);
                       if (gi.needs(1)) gi[1] = to(frugal::mul(g, sa.unpack()));
                     });
  return *this;
}

Tensor& Tensor::mul_(Scalar other) {
  const bool records = autograd::needs_grad(*this);
  autograd::check_inplace(*this, "mul_", records);
  detail::binary_scalar_kernel_inplace(BinaryOp::Mul, *this, other, "mul_");
  impl()->storage()->bump_version();
  if (records)
    autograd::rebase(*this, "mul_", {},
                     [other](const Tensor& g, InputGrads& gi) { gi[0] = frugal::mul(g, other); });
  return *this;
}

Tensor& Tensor::div_(Scalar other) {
  FRUGAL_CHECK(is_floating_point(), std::string("div_: true division in place needs a "
                                                "floating-point tensor, got ") +
                                        dtype_name(dtype()));
  const bool records = autograd::needs_grad(*this);
  autograd::check_inplace(*this, "div_", records);
  detail::binary_scalar_kernel_inplace(BinaryOp::Div, *this, other, "div_");
  impl()->storage()->bump_version();
  if (records)
    autograd::rebase(*this, "div_", {},
                     [other](const Tensor& g, InputGrads& gi) { gi[0] = frugal::div(g, other); });
  return *this;
}

Tensor& Tensor::relu_() {
  const bool records = autograd::needs_grad(*this);
  autograd::check_inplace(*this, "relu_", records);
  const auto loop = LoopBuilder(*this).input(*this).build();
  dispatch_numeric(dtype(), "relu_", [&]<class T>() {
    FRUGAL_KERNEL(device(), unary<T>)(kernels::cpu::UnaryOp::Relu, loop);
  });
  impl()->storage()->bump_version();
  if (records)  // saved after the bump: the result itself is what backward reads
    autograd::rebase(*this, "relu_", {},
                     [so = save(*this, "relu_")](const Tensor& g, InputGrads& gi) {
                       gi[0] = relu_backward(g, so.unpack());
                     });
  return *this;
}

}  // namespace frugal
