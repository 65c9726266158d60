// batch_norm and its backward: tensors to kernels/cpu/batch_norm.h. Training saves the input,
// the weight and two [C] vectors (mean, 1/std); evaluation saves the input only when the
// affine parameters need gradients.
#include "engine/ops/batch_norm.h"

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"

namespace frugal {

using autograd::InputGrads;
using autograd::save;
namespace cpu = kernels::cpu;

namespace {

ScalarType param_dtype(ScalarType input) {
  return input == kFloat16 || input == kBFloat16 ? kFloat32 : input;
}

void check_param(const Tensor& t, const char* what, std::int64_t channels, ScalarType dtype,
                 Device device) {
  if (!t.defined()) return;
  FRUGAL_CHECK(t.dim() == 1 && t.size(0) == channels && t.dtype() == dtype && t.is_contiguous() &&
                   t.device() == device,
               std::string("batch_norm: ") + what + " must be a contiguous " + dtype_name(dtype) +
                   " vector of " + std::to_string(channels) + " values on " + device.str() +
                   ", got " + dtype_name(t.dtype()) + " " + shape_string(t.sizes()) + " on " +
                   t.device().str());
}

}  // namespace

namespace {

Tensor batch_norm_impl(const Tensor& input_, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, bool training,
                       double momentum, double eps, bool relu) {
  FRUGAL_CHECK(input_.dim() >= 2,
               "batch_norm: expected an input [N, C, ...] of 2 or more dims, "
               "got shape " +
                   shape_string(input_.sizes()));
  FRUGAL_CHECK(eps > 0 && momentum >= 0 && momentum <= 1,
               "batch_norm: expected eps > 0 and momentum in [0, 1], got eps=" +
                   std::to_string(eps) + ", momentum=" + std::to_string(momentum));
  const std::int64_t n = input_.size(0), c = input_.size(1),
                     hw = input_.numel() / std::max<std::int64_t>(n * c, 1);
  const ScalarType pdt = param_dtype(input_.dtype());
  check_param(weight, "weight", c, pdt, input_.device());
  check_param(bias, "bias", c, pdt, input_.device());
  check_param(running_mean, "running_mean", c, pdt, input_.device());
  check_param(running_var, "running_var", c, pdt, input_.device());
  FRUGAL_CHECK(running_mean.defined() == running_var.defined(),
               "batch_norm: pass both running_mean and running_var, or neither");
  FRUGAL_CHECK(training || running_mean.defined(),
               "batch_norm: evaluation needs running_mean and running_var (or use training=true)");
  const Tensor input = input_.contiguous();
  Tensor out = empty(input.sizes(), input.options());
  const bool records = autograd::needs_grad(input_, weight, bias);

  if (training) {
    Tensor save_mean = empty({c}, input.options().dtype(pdt)),
           save_invstd = empty({c}, input.options().dtype(pdt));
    dispatch_floating(input.dtype(), "batch_norm", [&]<class T>() {
      using P = compute_t<T>;
      FRUGAL_KERNEL(input.device(), batch_norm_forward_train<T>)
      (input.data_ptr<T>(), data_ptr_or_null<P>(weight), data_ptr_or_null<P>(bias),
       data_ptr_or_null<P>(running_mean), data_ptr_or_null<P>(running_var), n, c, hw, momentum, eps,
       out.data_ptr<T>(), save_mean.data_ptr<P>(), save_invstd.data_ptr<P>(), relu);
    });
    if (running_mean.defined()) {  // written in place: saved copies of them are now stale
      running_mean.impl()->storage()->bump_version();
      running_var.impl()->storage()->bump_version();
    }
    if (records) {
      // With the ReLU fused, its output (this op's output) masks the incoming gradient: as a
      // separate pass first, which measured faster than masking inside both backward passes.
      const char* name = relu ? "batch_norm_relu" : "batch_norm";
      autograd::record(
          out, name, {input_, weight, bias},
          [sx = save(input, name), sw = save(weight, name), so = save(relu ? out : Tensor(), name),
           save_mean, save_invstd, n, c, hw](const Tensor& g, InputGrads& gi) {
            const Tensor& x = sx.unpack();
            const Tensor gc = (so.defined() ? relu_backward(g, so.unpack()) : g).contiguous();
            const ScalarType pd = save_mean.dtype();
            if (gi.needs(0)) gi[0] = empty(x.sizes(), x.options());
            if (gi.needs(1)) gi[1] = empty({c}, x.options().dtype(pd));
            if (gi.needs(2)) gi[2] = empty({c}, x.options().dtype(pd));
            dispatch_floating(x.dtype(), "batch_norm_backward", [&]<class T>() {
              using P = compute_t<T>;
              FRUGAL_KERNEL(x.device(), batch_norm_backward_train<T>)
              (gc.data_ptr<T>(), x.data_ptr<T>(), data_ptr_or_null<P>(sw.unpack()),
               save_mean.data_ptr<P>(), save_invstd.data_ptr<P>(), n, c, hw,
               data_ptr_or_null<T>(gi[0]), data_ptr_or_null<P>(gi[1]), data_ptr_or_null<P>(gi[2]));
            });
          });
    }
    return out;
  }

  dispatch_floating(input.dtype(), "batch_norm", [&]<class T>() {
    using P = compute_t<T>;
    FRUGAL_KERNEL(input.device(), batch_norm_forward_eval<T>)
    (input.data_ptr<T>(), data_ptr_or_null<P>(weight), data_ptr_or_null<P>(bias),
     data_ptr_or_null<P>(running_mean), data_ptr_or_null<P>(running_var), n, c, hw, eps,
     out.data_ptr<T>(), relu);
  });
  if (records) {
    const bool affine_grads = autograd::requires_grad(weight) || autograd::requires_grad(bias);
    autograd::record(
        out, relu ? "batch_norm_relu" : "batch_norm", {input_, weight, bias},
        [so = save(relu ? out : Tensor(), "batch_norm_relu"),
         sx = save(affine_grads ? input : Tensor(), "batch_norm"), sw = save(weight, "batch_norm"),
         sm = save(running_mean, "batch_norm"), sv = save(running_var, "batch_norm"), eps, n, c, hw,
         dtype = input.dtype(), sizes = DimVector(input.sizes())](const Tensor& g, InputGrads& gi) {
          // Evaluation-mode backward is rare: the fused ReLU's mask is applied first.
          const Tensor gc = (so.defined() ? relu_backward(g, so.unpack()) : g).contiguous();
          const ScalarType pd = sm.unpack().dtype();
          if (gi.needs(0)) gi[0] = empty(sizes, gc.options().dtype(dtype));
          if (gi.needs(1)) gi[1] = empty({c}, gc.options().dtype(pd));
          if (gi.needs(2)) gi[2] = empty({c}, gc.options().dtype(pd));
          dispatch_floating(dtype, "batch_norm_backward", [&]<class T>() {
            using P = compute_t<T>;
            FRUGAL_KERNEL(gc.device(), batch_norm_backward_eval<T>)
            (gc.data_ptr<T>(), data_ptr_or_null<T>(sx.unpack()), data_ptr_or_null<P>(sw.unpack()),
             sm.unpack().data_ptr<P>(), sv.unpack().data_ptr<P>(), eps, n, c, hw,
             data_ptr_or_null<T>(gi[0]), data_ptr_or_null<P>(gi[1]), data_ptr_or_null<P>(gi[2]));
          });
        });
  }
  return out;
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps) {
  return batch_norm_impl(input, weight, bias, running_mean, running_var, training, momentum, eps,
                         false);
}

Tensor batch_norm_relu(const Tensor& input, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, bool training,
                       double momentum, double eps) {
  return batch_norm_impl(input, weight, bias, running_mean, running_var, training, momentum, eps,
                         true);
}

}  // namespace frugal
