// optim::SGD with momentum, dampening, Nesterov momentum and (L2) weight decay, PyTorch's
// semantics and defaults; one fused pass per parameter.
#pragma once

#include "nn/optim/optimizer.h"

namespace frugal::optim {

struct SGDOptions {
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& momentum(double m) {
    momentum_ = m;
    return *this;
  }
  SGDOptions& dampening(double d) {
    dampening_ = d;
    return *this;
  }
  SGDOptions& weight_decay(double w) {
    weight_decay_ = w;
    return *this;
  }
  SGDOptions& nesterov(bool n) {
    nesterov_ = n;
    return *this;
  }
  double lr_, momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> parameters, const SGDOptions& options);
  void step() override;
  nn::NamedTensors state_dict() const override;
  void load_state_dict(const nn::NamedTensors& state) override;
  const SGDOptions& options() const { return options_; }

 private:
  SGDOptions options_;
  std::vector<Tensor> momentum_buffers_;  // undefined until a parameter's first step
};

}  // namespace frugal::optim
