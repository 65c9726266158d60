// Parameter initialisation as PyTorch does it by default, in place and without autograd:
// kaiming_uniform_ with a = sqrt(5) for Linear and Conv2d weights and a uniform bias in
// +-1/sqrt(fan_in), ones and zeros for batch norm.
#pragma once

#include "engine/generator.h"
#include "engine/tensor.h"

namespace frugal::nn::init {

// fan_in of a weight [out, in, ...]: in times the product of the kernel dims.
std::int64_t fan_in(const Tensor& weight);
// U(-bound, bound), bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)) (leaky relu).
Tensor& kaiming_uniform_(Tensor& weight, double a, Generator* generator = nullptr);
Tensor& uniform_(Tensor& t, double lo, double hi, Generator* generator = nullptr);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);

}  // namespace frugal::nn::init
