// nn::Linear: y = x W^T + b, weight [out_features, in_features], initialised as PyTorch's.
#pragma once

#include "nn/module.h"

namespace frugal::nn {

class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight;
  Tensor bias;  // undefined without bias
  const std::int64_t in_features, out_features;
};

}  // namespace frugal::nn
