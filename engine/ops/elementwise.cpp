// Arithmetic with broadcasting, comparisons and where — each forward with its backward.
#include "engine/ops/elementwise.h"

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/autocast_call.h"
#include "engine/ops/elementwise_common.h"
#include "engine/ops/factory.h"
#include "engine/ops/iterator.h"
#include "engine/ops/kernels.h"

namespace frugal {

using autograd::InputGrads;
using autograd::save;
using detail::binary_kernel;
using detail::binary_scalar_kernel;
using detail::GradTarget;
using kernels::cpu::BinaryOp;
using kernels::cpu::CompareOp;

ScalarType result_type(const Tensor& a, const Tensor& b) {
  const bool a_scalar = a.dim() == 0, b_scalar = b.dim() == 0;
  if (a_scalar != b_scalar && a.is_floating_point() == b.is_floating_point())
    return a_scalar ? b.dtype() : a.dtype();
  return promote_types(a.dtype(), b.dtype());
}

ScalarType result_type(const Tensor& a, Scalar b) {
  if (is_integral(a.dtype(), true) && b.is_floating_point()) return kFloat32;
  if (a.dtype() == kBool && b.is_integral() && !b.is_bool()) return kInt64;
  return a.dtype();
}

namespace {
ScalarType true_division_type(ScalarType t) { return is_floating_point(t) ? t : kFloat32; }
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  Tensor out = binary_kernel(BinaryOp::Add, a, b, result_type(a, b), "add", alpha.to_double());
  if (autograd::needs_grad(a, b)) {
    autograd::record(
        out, "add", {a, b},
        [ta = GradTarget(a), tb = GradTarget(b), alpha](const Tensor& g, InputGrads& gi) {
          if (gi.needs(0)) gi[0] = ta(g);
          if (gi.needs(1)) gi[1] = tb(alpha.to_double() == 1 ? g : mul(g, alpha));
        });
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) {
  FRUGAL_CHECK(a.dtype() != kBool || b.dtype() != kBool,
               "sub: subtraction of bool tensors is not "
               "supported; use logical ops");
  Tensor out = binary_kernel(BinaryOp::Sub, a, b, result_type(a, b), "sub", alpha.to_double());
  if (autograd::needs_grad(a, b)) {
    autograd::record(
        out, "sub", {a, b},
        [ta = GradTarget(a), tb = GradTarget(b), alpha](const Tensor& g, InputGrads& gi) {
          if (gi.needs(0)) gi[0] = ta(g);
          if (gi.needs(1)) gi[1] = tb(mul(g, -alpha.to_double()));
        });
  }
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel(BinaryOp::Mul, a, b, result_type(a, b), "mul");
  if (autograd::needs_grad(a, b)) {
    // Each input's gradient needs the other input: save only what will be used.
    autograd::record(out, "mul", {a, b},
                     [ta = GradTarget(a), tb = GradTarget(b),
                      sa = save(autograd::requires_grad(b) ? a : Tensor(), "mul"),
                      sb = save(autograd::requires_grad(a) ? b : Tensor(), "mul")](const Tensor& g,
                                                                                   InputGrads& gi) {
                       if (gi.needs(0)) gi[0] = ta(mul(g, sb.unpack()));
                       if (gi.needs(1)) gi[1] = tb(mul(g, sa.unpack()));
                     });
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel(BinaryOp::Div, a, b, true_division_type(result_type(a, b)), "div");
  if (autograd::needs_grad(a, b)) {
    autograd::record(out, "div", {a, b},
                     [ta = GradTarget(a), tb = GradTarget(b), sa = save(a, "div"),
                      sb = save(b, "div")](const Tensor& g, InputGrads& gi) {
                       const Tensor& bv = sb.unpack();
                       if (gi.needs(0)) gi[0] = ta(div(g, bv));
                       // d(a/b)/db = -a / b^2
                       if (gi.needs(1)) gi[1] = tb(neg(div(mul(g, sa.unpack()), mul(bv, bv))));
                     });
  }
  return out;
}

Tensor add(const Tensor& a, Scalar b) {
  Tensor out = binary_scalar_kernel(BinaryOp::Add, a, b, result_type(a, b), "add");
  if (autograd::needs_grad(a))
    autograd::record(out, "add", {a},
                     [ta = GradTarget(a)](const Tensor& g, InputGrads& gi) { gi[0] = ta(g); });
  return out;
}

Tensor sub(const Tensor& a, Scalar b) {
  Tensor out = binary_scalar_kernel(BinaryOp::Sub, a, b, result_type(a, b), "sub");
  if (autograd::needs_grad(a))
    autograd::record(out, "sub", {a},
                     [ta = GradTarget(a)](const Tensor& g, InputGrads& gi) { gi[0] = ta(g); });
  return out;
}

Tensor rsub(const Tensor& a, Scalar b) {
  // b - a = (-1 * a) + b, in one pass over a.
  Tensor out = binary_scalar_kernel(BinaryOp::Sub, a, b, result_type(a, b), "rsub");
  out = detail::unary_kernel(kernels::cpu::UnaryOp::Neg, out, "rsub");
  if (autograd::needs_grad(a))
    autograd::record(out, "rsub", {a},
                     [ta = GradTarget(a)](const Tensor& g, InputGrads& gi) { gi[0] = ta(neg(g)); });
  return out;
}

Tensor mul(const Tensor& a, Scalar b) {
  Tensor out = binary_scalar_kernel(BinaryOp::Mul, a, b, result_type(a, b), "mul");
  if (autograd::needs_grad(a))
    autograd::record(out, "mul", {a}, [ta = GradTarget(a), b](const Tensor& g, InputGrads& gi) {
      gi[0] = ta(mul(g, b));
    });
  return out;
}

Tensor div(const Tensor& a, Scalar b) {
  Tensor out =
      binary_scalar_kernel(BinaryOp::Div, a, b, true_division_type(result_type(a, b)), "div");
  if (autograd::needs_grad(a))
    autograd::record(out, "div", {a}, [ta = GradTarget(a), b](const Tensor& g, InputGrads& gi) {
      gi[0] = ta(div(g, b));
    });
  return out;
}

Tensor rdiv(const Tensor& a, Scalar b) {
  Tensor recip =
      detail::unary_kernel(kernels::cpu::UnaryOp::Reciprocal,
                           detail::cast_for_kernel(a, true_division_type(a.dtype())), "rdiv");
  Tensor out = binary_scalar_kernel(BinaryOp::Mul, recip, b, recip.dtype(), "rdiv");
  if (autograd::needs_grad(a)) {
    // d(b/a)/da = -b / a^2 = -out / a
    autograd::record(out, "rdiv", {a},
                     [ta = GradTarget(a), sa = save(a, "rdiv"), so = save(out, "rdiv")](
                         const Tensor& g, InputGrads& gi) {
                       gi[0] = ta(neg(div(mul(g, so.unpack()), sa.unpack())));
                     });
  }
  return out;
}

Tensor pow(const Tensor& a, Scalar exponent) {
  if (autocast::should_apply(a.device()))
    return autocast::call(
        autocast::Op::kPow, a.device(), [exponent](const Tensor& x) { return pow(x, exponent); },
        a);
  const ScalarType dtype = result_type(a, exponent);
  Tensor out = binary_scalar_kernel(BinaryOp::Pow, a, exponent, dtype, "pow");
  if (autograd::needs_grad(a)) {
    autograd::record(
        out, "pow", {a},
        [ta = GradTarget(a), sa = save(a, "pow"), exponent](const Tensor& g, InputGrads& gi) {
          const double p = exponent.to_double();
          gi[0] = ta(p == 0 ? mul(g, 0) : mul(mul(g, pow(sa.unpack(), p - 1)), p));
        });
  }
  return out;
}

namespace {

Tensor compare(CompareOp op, const Tensor& a, const Tensor& b, const char* name) {
  detail::check_same_device(a, b, name);
  const ScalarType dtype = result_type(a, b);
  Tensor out = empty(broadcast_shapes(a.sizes(), b.sizes(), name), a.options().dtype(kBool));
  const Tensor ac = detail::cast_for_kernel(a, dtype), bc = detail::cast_for_kernel(b, dtype);
  const auto loop = LoopBuilder(out).input(ac).input(bc).build();
  dispatch_all(dtype, name, [&]<class T>() { FRUGAL_KERNEL(out.device(), compare<T>)(op, loop); });
  return out;
}

Tensor compare(CompareOp op, const Tensor& a, Scalar b, const char* name) {
  const ScalarType dtype = result_type(a, b);
  Tensor out = empty(a.sizes(), a.options().dtype(kBool));
  const Tensor ac = detail::cast_for_kernel(a, dtype);
  dispatch_all(dtype, name, [&]<class T>() {
    const T value = b.to<T>();
    FRUGAL_KERNEL(out.device(), compare<T>)
    (op, LoopBuilder(out).input(ac).scalar(&value, scalar_type_of<T>()).build());
  });
  return out;
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare(CompareOp::Eq, a, b, "eq"); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ne, a, b, "ne"); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Lt, a, b, "lt"); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(CompareOp::Le, a, b, "le"); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Gt, a, b, "gt"); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ge, a, b, "ge"); }
Tensor eq(const Tensor& a, Scalar b) { return compare(CompareOp::Eq, a, b, "eq"); }
Tensor ne(const Tensor& a, Scalar b) { return compare(CompareOp::Ne, a, b, "ne"); }
Tensor lt(const Tensor& a, Scalar b) { return compare(CompareOp::Lt, a, b, "lt"); }
Tensor le(const Tensor& a, Scalar b) { return compare(CompareOp::Le, a, b, "le"); }
Tensor gt(const Tensor& a, Scalar b) { return compare(CompareOp::Gt, a, b, "gt"); }
Tensor ge(const Tensor& a, Scalar b) { return compare(CompareOp::Ge, a, b, "ge"); }

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  FRUGAL_CHECK(condition.dtype() == kBool, std::string("where: the condition must be bool, got ") +
                                               dtype_name(condition.dtype()));
  detail::check_same_device(a, b, "where");
  detail::check_same_device(condition, a, "where");
  const ScalarType dtype = result_type(a, b);
  const DimVector shape =
      broadcast_shapes(condition.sizes(), broadcast_shapes(a.sizes(), b.sizes(), "where"), "where");
  Tensor out = empty(shape, a.options().dtype(dtype));
  const Tensor ac = detail::cast_for_kernel(a, dtype), bc = detail::cast_for_kernel(b, dtype);
  const auto loop = LoopBuilder(out).input(condition).input(ac).input(bc).build();
  dispatch_all(dtype, "where", [&]<class T>() { FRUGAL_KERNEL(out.device(), where<T>)(loop); });
  if (autograd::needs_grad(a, b)) {
    autograd::record(out, "where", {a, b},
                     [ta = GradTarget(a), tb = GradTarget(b), sc = save(condition, "where")](
                         const Tensor& g, InputGrads& gi) {
                       const Tensor zero = zeros({}, g.options());
                       if (gi.needs(0)) gi[0] = ta(where(sc.unpack(), g, zero));
                       if (gi.needs(1)) gi[1] = tb(where(sc.unpack(), zero, g));
                     });
  }
  return out;
}

}  // namespace frugal
