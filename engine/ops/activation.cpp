// Unary math and activations, each with its backward. Where the derivative is a function
// of the output (exp, sqrt, relu, sigmoid, tanh) the op saves its output, not its input:
// the input may then be freed as soon as the caller drops it.
#include <cmath>
#include <limits>

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/ops/autocast_call.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/elementwise_common.h"

namespace frugal {

using autograd::InputGrads;
using autograd::save;
using detail::unary_kernel;
using kernels::cpu::BinaryOp;
using kernels::cpu::UnaryOp;

namespace {

// The floating type transcendental ops compute in (integers become float32, as in PyTorch).
Tensor as_floating(const Tensor& x) {
  return x.is_floating_point() ? x : detail::cast_for_kernel(x, kFloat32);
}

Tensor fused_backward(BinaryOp op, const Tensor& grad, const Tensor& saved, const char* name) {
  return detail::binary_kernel(op, grad, saved, grad.dtype(), name);
}

}  // namespace

Tensor relu_backward(const Tensor& g, const Tensor& y) {
  return fused_backward(BinaryOp::ReluBackward, g, y, "relu_backward");
}
Tensor sigmoid_backward(const Tensor& g, const Tensor& y) {
  return fused_backward(BinaryOp::SigmoidBackward, g, y, "sigmoid_backward");
}
Tensor tanh_backward(const Tensor& g, const Tensor& y) {
  return fused_backward(BinaryOp::TanhBackward, g, y, "tanh_backward");
}
Tensor gelu_backward(const Tensor& g, const Tensor& x) {
  return fused_backward(BinaryOp::GeluBackward, g, x, "gelu_backward");
}

Tensor neg(const Tensor& x) {
  FRUGAL_CHECK(x.dtype() != kBool, "neg: negation of a bool tensor is not supported");
  Tensor out = unary_kernel(UnaryOp::Neg, x, "neg");
  if (autograd::needs_grad(x))
    autograd::record(out, "neg", {x}, [](const Tensor& g, InputGrads& gi) { gi[0] = neg(g); });
  return out;
}

Tensor exp(const Tensor& x) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kExp, x.device(), [](const Tensor& a) { return exp(a); }, x);
  Tensor out = unary_kernel(UnaryOp::Exp, as_floating(x), "exp");
  if (autograd::needs_grad(x))
    autograd::record(out, "exp", {x}, [so = save(out, "exp")](const Tensor& g, InputGrads& gi) {
      gi[0] = mul(g, so.unpack());
    });
  return out;
}

Tensor log(const Tensor& x) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kLog, x.device(), [](const Tensor& a) { return log(a); }, x);
  Tensor out = unary_kernel(UnaryOp::Log, as_floating(x), "log");
  if (autograd::needs_grad(x))
    autograd::record(out, "log", {x}, [sx = save(x, "log")](const Tensor& g, InputGrads& gi) {
      gi[0] = div(g, sx.unpack());
    });
  return out;
}

Tensor sqrt(const Tensor& x) {
  Tensor out = unary_kernel(UnaryOp::Sqrt, as_floating(x), "sqrt");
  if (autograd::needs_grad(x))
    autograd::record(out, "sqrt", {x}, [so = save(out, "sqrt")](const Tensor& g, InputGrads& gi) {
      gi[0] = div(g, mul(so.unpack(), 2));
    });
  return out;
}

Tensor abs(const Tensor& x) {
  Tensor out = unary_kernel(UnaryOp::Abs, x, "abs");
  if (autograd::needs_grad(x))
    autograd::record(out, "abs", {x}, [sx = save(x, "abs")](const Tensor& g, InputGrads& gi) {
      gi[0] = mul(g, unary_kernel(UnaryOp::Sign, sx.unpack(), "abs_backward"));
    });
  return out;
}

Tensor relu(const Tensor& x) {
  Tensor out = unary_kernel(UnaryOp::Relu, x, "relu");
  if (autograd::needs_grad(x))
    autograd::record(out, "relu", {x}, [so = save(out, "relu")](const Tensor& g, InputGrads& gi) {
      gi[0] = relu_backward(g, so.unpack());
    });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  Tensor out = unary_kernel(UnaryOp::Sigmoid, as_floating(x), "sigmoid");
  if (autograd::needs_grad(x))
    autograd::record(out, "sigmoid", {x},
                     [so = save(out, "sigmoid")](const Tensor& g, InputGrads& gi) {
                       gi[0] = sigmoid_backward(g, so.unpack());
                     });
  return out;
}

Tensor tanh(const Tensor& x) {
  Tensor out = unary_kernel(UnaryOp::Tanh, as_floating(x), "tanh");
  if (autograd::needs_grad(x))
    autograd::record(out, "tanh", {x}, [so = save(out, "tanh")](const Tensor& g, InputGrads& gi) {
      gi[0] = tanh_backward(g, so.unpack());
    });
  return out;
}

Tensor gelu(const Tensor& x) {
  Tensor out = unary_kernel(UnaryOp::Gelu, as_floating(x), "gelu");
  if (autograd::needs_grad(x))
    autograd::record(out, "gelu", {x}, [sx = save(x, "gelu")](const Tensor& g, InputGrads& gi) {
      gi[0] = gelu_backward(g, sx.unpack());
    });
  return out;
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  FRUGAL_CHECK(min || max, "clamp: at least one of min and max must be given");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double lo = min ? min->to_double() : nan, hi = max ? max->to_double() : nan;
  Tensor out = unary_kernel(UnaryOp::Clamp, x, "clamp", lo, hi);
  if (autograd::needs_grad(x))
    autograd::record(out, "clamp", {x},
                     [sx = save(x, "clamp"), lo, hi](const Tensor& g, InputGrads& gi) {
                       gi[0] = detail::binary_kernel(BinaryOp::ClampBackward, g, sx.unpack(),
                                                     g.dtype(), "clamp_backward", lo, hi);
                     });
  return out;
}

}  // namespace frugal
