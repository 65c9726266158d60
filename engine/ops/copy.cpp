// Copies and conversions, with their backward: a copy's gradient is the incoming gradient,
// converted back to the source's dtype.
#include "engine/ops/copy.h"

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/device_copy.h"
#include "engine/ops/factory.h"
#include "engine/ops/iterator.h"
#include "engine/ops/kernels.h"
#include "engine/ops/shape.h"

namespace frugal {

using autograd::InputGrads;

void copy_data(const Tensor& dst, const Tensor& src_) {
  // Across devices the bytes move first (as they are, contiguous), then convert on dst's device.
  const Tensor src = src_.device() == dst.device() ? src_ : move_to_device(src_, dst.device());
  broadcast_shapes(dst.sizes(), src.sizes(), "copy_");  // validates
  FRUGAL_CHECK(static_cast<std::size_t>(dst.dim()) >= src.sizes().size(),
               "copy_: cannot copy a tensor of shape " + shape_string(src.sizes()) +
                   " into one of shape " + shape_string(dst.sizes()));
  const auto loop = LoopBuilder(dst).input(src).build();
  dispatch_all(dst.dtype(), "copy_", [&]<class D>() {
    dispatch_all(src.dtype(), "copy_", [&]<class S>() {
      FRUGAL_KERNEL(dst.device(), cast<D, S>)(loop);
    });
  });
}

Tensor clone(const Tensor& t) {
  Tensor out = empty(t.sizes(), t.options());
  copy_data(out, t);
  if (autograd::needs_grad(t))
    autograd::record(out, "clone", {t}, [](const Tensor& g, InputGrads& gi) { gi[0] = g; });
  return out;
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor to_dtype(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = empty(t.sizes(), t.options().dtype(dtype));
  copy_data(out, t);
  if (autograd::needs_grad(t)) {
    FRUGAL_CHECK(is_floating_point(dtype), std::string("to: converting a tensor that requires "
                                                       "grad to ") +
                                               dtype_name(dtype) +
                                               " would cut its gradient; detach() it first");
    const ScalarType from = t.dtype();
    autograd::record(out, "to", {t},
                     [from](const Tensor& g, InputGrads& gi) { gi[0] = g.to(from); });
  }
  return out;
}

Tensor Tensor::clone() const { return frugal::clone(*this); }
Tensor Tensor::contiguous() const { return frugal::contiguous(*this); }
Tensor Tensor::to(ScalarType dtype) const { return to_dtype(*this, dtype); }

Tensor Tensor::to(Device device, bool non_blocking) const {
  if (device == this->device()) return *this;
  Tensor out = move_to_device(*this, device, non_blocking);
  if (autograd::needs_grad(*this)) {
    const Device from = this->device();
    autograd::record(out, "to", {*this},
                     [from](const Tensor& g, InputGrads& gi) { gi[0] = g.to(from); });
  }
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) {
  const bool records = autograd::needs_grad(*this, src);
  autograd::check_inplace(*this, "copy_", records);
  copy_data(*this, src);
  impl()->storage()->bump_version();
  if (records) {
    const DimVector src_sizes(src.sizes());
    const ScalarType src_dtype = src.dtype();
    autograd::rebase(*this, "copy_", {src},
                     [src_sizes, src_dtype](const Tensor& g, InputGrads& gi) {
                       // The old value of self was overwritten: no gradient flows to it.
                       if (gi.needs(1)) gi[1] = sum_to_size(g, src_sizes).to(src_dtype);
                     });
  }
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  const bool records = autograd::needs_grad(*this);
  autograd::check_inplace(*this, "fill_", records);
  const auto loop = LoopBuilder(*this).build();
  dispatch_all(dtype(), "fill_", [&]<class T>() {
    FRUGAL_KERNEL(device(), fill<T>)(loop, value.to<T>());
  });
  impl()->storage()->bump_version();
  if (records) autograd::rebase(*this, "fill_", {}, [](const Tensor&, InputGrads&) {});
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

}  // namespace frugal
