// PyTorch's default initialisers, on frugal's Philox generator.
#include "nn/init.h"

#include <cmath>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/factory.h"

namespace frugal::nn::init {

std::int64_t fan_in(const Tensor& weight) {
  FRUGAL_CHECK(weight.dim() >= 2, "init: fan_in needs a weight of 2 or more dims, got " +
                                      shape_string(weight.sizes()));
  std::int64_t n = weight.size(1);
  for (std::int64_t d = 2; d < weight.dim(); ++d) n *= weight.size(d);
  return n;
}

Tensor& kaiming_uniform_(Tensor& weight, double a, Generator* generator) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound =
      gain * std::sqrt(3.0 / static_cast<double>(std::max<std::int64_t>(fan_in(weight), 1)));
  return init::uniform_(weight, -bound, bound, generator);
}

Tensor& uniform_(Tensor& t, double lo, double hi, Generator* generator) {
  NoGradGuard no_grad;
  return frugal::uniform_(t, lo, hi, generator);
}

Tensor& zeros_(Tensor& t) {
  NoGradGuard no_grad;
  return t.zero_();
}

Tensor& ones_(Tensor& t) {
  NoGradGuard no_grad;
  return t.fill_(1);
}

}  // namespace frugal::nn::init
