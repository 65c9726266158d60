// Dropout: zeroes each element with probability p in training and scales the rest by
// 1 / (1 - p); the identity in evaluation. The backward keeps a one-byte mask per element.
#pragma once

#include "engine/generator.h"
#include "engine/tensor.h"

namespace frugal {

Tensor dropout(const Tensor& input, double p, bool training, Generator* generator = nullptr);

}  // namespace frugal
