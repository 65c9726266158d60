// Losses and their backward: tensors to kernels/cpu/loss.h.
#include "engine/ops/loss.h"

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/autocast_call.h"
#include "engine/ops/elementwise_common.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"

namespace frugal {

using autograd::InputGrads;
using autograd::save;
namespace cpu = kernels::cpu;

namespace {

cpu::Reduction kernel_reduction(Reduction r) {
  switch (r) {
    case Reduction::None:
      return cpu::Reduction::None;
    case Reduction::Sum:
      return cpu::Reduction::Sum;
    default:
      return cpu::Reduction::Mean;
  }
}

void check_loss_args(const Tensor& input, const Tensor& target, const LossOptions& o,
                     const char* op) {
  FRUGAL_CHECK(input.dim() == 2, std::string(op) + ": expected input [N, C], got shape " +
                                     shape_string(input.sizes()));
  FRUGAL_CHECK(target.dim() == 1 && target.size(0) == input.size(0),
               std::string(op) + ": expected target [" + std::to_string(input.size(0)) +
                   "] for input " + shape_string(input.sizes()) + ", got shape " +
                   shape_string(target.sizes()));
  detail::check_same_device(input, target, op);
  if (o.weight.defined()) detail::check_same_device(input, o.weight, op);
  FRUGAL_CHECK(target.dtype() == kInt64, std::string(op) +
                                             ": expected int64 class indices as "
                                             "target, got " +
                                             dtype_name(target.dtype()));
  if (o.weight.defined())
    FRUGAL_CHECK(o.weight.dim() == 1 && o.weight.size(0) == input.size(1) &&
                     o.weight.dtype() == input.dtype(),
                 std::string(op) + ": weight must be a " + dtype_name(input.dtype()) +
                     " vector of " + std::to_string(input.size(1)) + " class weights, got " +
                     dtype_name(o.weight.dtype()) + " " + shape_string(o.weight.sizes()));
}

Tensor loss_output(const Tensor& input, Reduction r) {
  return r == Reduction::None ? empty({input.size(0)}, input.options())
                              : empty({}, input.options());
}

}  // namespace

Tensor cross_entropy(const Tensor& input_, const Tensor& target_, const LossOptions& o) {
  if (autocast::should_apply(input_.device()))
    return autocast::call(
        autocast::Op::kCrossEntropy, input_.device(),
        [&](const Tensor& x, const Tensor& t) { return cross_entropy(x, t, o); }, input_, target_);
  check_loss_args(input_, target_, o, "cross_entropy");
  const Tensor input = input_.contiguous(), target = target_.contiguous();
  const Tensor weight = o.weight.defined() ? o.weight.contiguous() : Tensor();
  const std::int64_t n = input.size(0), c = input.size(1);
  const cpu::Reduction red = kernel_reduction(o.reduction);
  Tensor out = loss_output(input, o.reduction);
  Tensor total_weight = empty({}, input.options()), row_lse = empty({n}, input.options());
  dispatch_floating(input.dtype(), "cross_entropy", [&]<class T>() {
    FRUGAL_KERNEL(input.device(), cross_entropy_forward<T>)
    (input.data_ptr<T>(), target.data_ptr<std::int64_t>(), data_ptr_or_null<T>(weight), n, c, red,
     o.ignore_index, out.data_ptr<T>(), total_weight.data_ptr<T>(), nullptr, row_lse.data_ptr<T>());
  });
  if (autograd::needs_grad(input_)) {
    autograd::record(out, "cross_entropy", {input_},
                     [sx = save(input, "cross_entropy"), target, weight, total_weight, row_lse, red,
                      ignore = o.ignore_index, n, c](const Tensor& g, InputGrads& gi) {
                       const Tensor gc = g.contiguous();
                       const Tensor& x = sx.unpack();
                       Tensor grad = empty(x.sizes(), x.options());
                       dispatch_floating(x.dtype(), "cross_entropy_backward", [&]<class T>() {
                         FRUGAL_KERNEL(x.device(), cross_entropy_backward<T>)
                         (gc.data_ptr<T>(), x.data_ptr<T>(), row_lse.data_ptr<T>(),
                          target.data_ptr<std::int64_t>(), data_ptr_or_null<T>(weight), n, c, red,
                          ignore, total_weight.data_ptr<T>(), grad.data_ptr<T>());
                       });
                       gi[0] = std::move(grad);
                     });
  }
  return out;
}

Tensor nll_loss(const Tensor& input_, const Tensor& target_, const LossOptions& o) {
  if (autocast::should_apply(input_.device()))
    return autocast::call(
        autocast::Op::kNllLoss, input_.device(),
        [&](const Tensor& x, const Tensor& t) { return nll_loss(x, t, o); }, input_, target_);
  check_loss_args(input_, target_, o, "nll_loss");
  const Tensor input = input_.contiguous(), target = target_.contiguous();
  const Tensor weight = o.weight.defined() ? o.weight.contiguous() : Tensor();
  const std::int64_t n = input.size(0), c = input.size(1);
  const cpu::Reduction red = kernel_reduction(o.reduction);
  Tensor out = loss_output(input, o.reduction);
  Tensor total_weight = empty({}, input.options());
  dispatch_floating(input.dtype(), "nll_loss", [&]<class T>() {
    FRUGAL_KERNEL(input.device(), nll_loss_forward<T>)
    (input.data_ptr<T>(), target.data_ptr<std::int64_t>(), data_ptr_or_null<T>(weight), n, c, red,
     o.ignore_index, out.data_ptr<T>(), total_weight.data_ptr<T>());
  });
  if (autograd::needs_grad(input_)) {
    // The gradient depends only on the targets: the log-probabilities are not kept.
    autograd::record(out, "nll_loss", {input_},
                     [target, weight, total_weight, red, ignore = o.ignore_index, n, c,
                      dtype = input.dtype()](const Tensor& g, InputGrads& gi) {
                       const Tensor gc = g.contiguous();
                       Tensor grad = empty({n, c}, gc.options().dtype(dtype));
                       dispatch_floating(dtype, "nll_loss_backward", [&]<class T>() {
                         FRUGAL_KERNEL(gc.device(), nll_loss_backward<T>)
                         (gc.data_ptr<T>(), target.data_ptr<std::int64_t>(),
                          data_ptr_or_null<T>(weight), n, c, red, ignore,
                          total_weight.data_ptr<T>(), grad.data_ptr<T>());
                       });
                       gi[0] = std::move(grad);
                     });
  }
  return out;
}

}  // namespace frugal
