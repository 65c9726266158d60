// optim::Optimizer: what SGD and AdamW share — the parameters, a learning rate that
// schedulers change, zero_grad (to none by default, as PyTorch), and per-parameter state
// exposed by name for checkpoints ("0.momentum_buffer", "3.exp_avg", ...).
#pragma once

#include <string>
#include <vector>

#include "engine/dispatch.h"
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
  // Parameter i's gradient, contiguous, as an update kernel reads it; undefined when it has
  // none (skip it). A gradient whose shape or dtype does not match is a frugal::Error.
  Tensor gradient_for_update(std::size_t i, const char* op) const;
  // The parameter index that a state entry "I.field" names (its text before the first dot,
  // decimal digits only, below the parameter count); a frugal::Error naming `who` and the
  // entry otherwise. Checkpoint files are outside input: "x.exp_avg" must not throw from
  // std::stoul, nor "3junk" pass as 3.
  std::size_t state_entry_index(const std::string& name, const char* who) const;
  // Calls f.template operator()<T>() for float32 / float64 parameters, the master-weight types
  // the fused update kernels support; other dtypes are a frugal::Error naming `op`.
  template <class F>
  static void dispatch_master(ScalarType t, const char* op, const F& f) {
    if (t == kFloat32) return f.template operator()<float>();
    if (t == kFloat64) return f.template operator()<double>();
    throw_unsupported_dtype(op, t,
                            "float32 and float64 parameters (keep master weights in float32)");
  }

  std::vector<Tensor> parameters_;
  double lr_;
};

}  // namespace frugal::optim
