// nn::CrossEntropyLoss: the module form of cross_entropy (class weights, ignore_index,
// reduction), called as loss(logits, target).
#pragma once

#include "engine/ops/loss.h"

namespace frugal::nn {

class CrossEntropyLoss {
 public:
  explicit CrossEntropyLoss(LossOptions options = {}) : options_(std::move(options)) {}
  Tensor operator()(const Tensor& logits, const Tensor& target) const {
    return cross_entropy(logits, target, options_);
  }
  const LossOptions& options() const { return options_; }

 private:
  LossOptions options_;
};

}  // namespace frugal::nn
