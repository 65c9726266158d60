// optim::Optimizer: what SGD and AdamW share — the parameters, a learning rate that
// schedulers change, zero_grad (to none by default, as PyTorch), and per-parameter state
// exposed by name for checkpoints ("0.momentum_buffer", "3.exp_avg", ...).
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"

namespace frugal::optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> parameters, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update from the parameters' current gradients (parameters without one are skipped).
  virtual void step() = 0;
  // Sets gradients to none (frees them) or, with set_to_none=false, to zero.
  void zero_grad(bool set_to_none = true);

  double lr() const { return lr_; }
  void set_lr(double lr);
  const std::vector<Tensor>& parameters() const { return parameters_; }

  // The optimizer's state as named tensors, and back (the same names and shapes).
  virtual nn::NamedTensors state_dict() const = 0;
  virtual void load_state_dict(const nn::NamedTensors& state) = 0;

 protected:
  std::vector<Tensor> parameters_;
  double lr_;
};

}  // namespace frugal::optim
