// optim::AdamW: Adam with decoupled weight decay, PyTorch's semantics and defaults
// (lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight_decay 1e-2); one fused pass per parameter.
#pragma once

#include "nn/optim/optimizer.h"

namespace frugal::optim {

struct AdamWOptions {
  explicit AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  AdamWOptions& betas(double b1, double b2) {
    beta1_ = b1;
    beta2_ = b2;
    return *this;
  }
  AdamWOptions& eps(double e) {
    eps_ = e;
    return *this;
  }
  AdamWOptions& weight_decay(double w) {
    weight_decay_ = w;
    return *this;
  }
  double lr_, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 1e-2;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> parameters, const AdamWOptions& options);
  void step() override;
  nn::NamedTensors state_dict() const override;
  void load_state_dict(const nn::NamedTensors& state) override;
  const AdamWOptions& options() const { return options_; }

 private:
  AdamWOptions options_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;  // allocated at a parameter's first step
  std::vector<std::int64_t> steps_;
};

}  // namespace frugal::optim
