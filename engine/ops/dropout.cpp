// dropout and its backward: a Philox bernoulli mask (kernels/cpu/random.h), then masked
// scaling (kernels/cpu/dropout.h). The mask, not the input, is what backward needs.
#include "engine/ops/dropout.h"

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"

namespace frugal {

using autograd::InputGrads;
namespace cpu = kernels::cpu;

namespace {

Tensor apply_mask(const Tensor& x, const Tensor& mask, double scale, const char* op) {
  const Tensor xc = x.contiguous();
  Tensor out = empty(xc.sizes(), xc.options());
  dispatch_floating(xc.dtype(), op, [&]<class T>() {
    FRUGAL_KERNEL(xc.device(), masked_scale<T>)
    (xc.data_ptr<T>(), mask.data_ptr<std::uint8_t>(), scale, out.data_ptr<T>(), xc.numel());
  });
  return out;
}

}  // namespace

Tensor dropout(const Tensor& input, double p, bool training, Generator* generator) {
  FRUGAL_CHECK(p >= 0 && p <= 1,
               "dropout: probability has to be between 0 and 1, but got " + std::to_string(p));
  if (!training || p == 0) return input;
  FRUGAL_CHECK(
      input.is_floating_point(),
      std::string("dropout: expected a floating-point input, got ") + dtype_name(input.dtype()));
  Generator& gen = generator ? *generator : default_generator();
  Tensor mask = empty(input.sizes(), input.options().dtype(kUInt8));
  const std::int64_t n = input.numel();
  FRUGAL_KERNEL(input.device(), bernoulli)
  (mask.data_ptr<std::uint8_t>(), n, gen.seed(), gen.reserve(cpu::random_blocks(n)), 1.0 - p);
  const double scale = p == 1 ? 0.0 : 1.0 / (1.0 - p);
  Tensor out = apply_mask(input, mask, scale, "dropout");
  if (autograd::needs_grad(input)) {
    autograd::record(out, "dropout", {input}, [mask, scale](const Tensor& g, InputGrads& gi) {
      gi[0] = apply_mask(g, mask, scale, "dropout_backward");
    });
  }
  return out;
}

}  // namespace frugal
