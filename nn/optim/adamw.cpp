// AdamW's step through the fused kernel, and its moments and step counts as state.
#include "nn/optim/adamw.h"

#include "common/error.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"

namespace frugal::optim {

AdamW::AdamW(std::vector<Tensor> parameters, const AdamWOptions& o)
    : Optimizer(std::move(parameters), o.lr_),
      options_(o),
      exp_avg_(parameters_.size()),
      exp_avg_sq_(parameters_.size()),
      steps_(parameters_.size(), 0) {
  FRUGAL_CHECK(o.beta1_ >= 0 && o.beta1_ < 1 && o.beta2_ >= 0 && o.beta2_ < 1,
               "AdamW: betas must be in [0, 1), got " + std::to_string(o.beta1_) + " and " +
                   std::to_string(o.beta2_));
  FRUGAL_CHECK(o.eps_ >= 0 && o.weight_decay_ >= 0,
               "AdamW: eps and weight_decay must be non-negative");
}

void AdamW::step() {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& p = parameters_[i];
    const Tensor g = gradient_for_update(i, "AdamW");
    if (!g.defined()) continue;
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = zeros(p.sizes(), p.options());
      exp_avg_sq_[i] = zeros(p.sizes(), p.options());
    }
    ++steps_[i];
    dispatch_master(p.dtype(), "AdamW", [&]<class T>() {
      FRUGAL_KERNEL(p.device(), adamw_step<T>)
      (p.data_ptr<T>(), g.data_ptr<T>(), exp_avg_[i].data_ptr<T>(), exp_avg_sq_[i].data_ptr<T>(),
       p.numel(), lr_, options_.beta1_, options_.beta2_, options_.eps_, options_.weight_decay_,
       steps_[i]);
    });
    p.impl()->storage()->bump_version();
  }
}

nn::NamedTensors AdamW::state_dict() const {
  nn::NamedTensors out;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!exp_avg_[i].defined()) continue;
    const std::string k = std::to_string(i);
    out.emplace_back(k + ".step", full({}, steps_[i], kInt64));
    out.emplace_back(k + ".exp_avg", exp_avg_[i]);
    out.emplace_back(k + ".exp_avg_sq", exp_avg_sq_[i]);
  }
  return out;
}

void AdamW::load_state_dict(const nn::NamedTensors& state) {
  std::vector<Tensor> m(parameters_.size()), v(parameters_.size());
  std::vector<std::int64_t> steps(parameters_.size(), 0);
  for (const auto& [name, t] : state) {
    const std::size_t i = state_entry_index(name, "AdamW");
    const std::string field = name.substr(name.find('.') + 1);
    if (field == "step") {
      FRUGAL_CHECK(t.numel() == 1 && is_integral(t.dtype(), /*include_bool=*/false),
                   "AdamW.load_state_dict: '" + name + "' must hold one integer");
      steps[i] = t.item<std::int64_t>();
      continue;
    }
    FRUGAL_CHECK((field == "exp_avg" || field == "exp_avg_sq") &&
                     t.sizes() == parameters_[i].sizes() && t.dtype() == parameters_[i].dtype(),
                 "AdamW.load_state_dict: '" + name + "' " + dtype_name(t.dtype()) +
                     shape_string(t.sizes()) + " does not match parameter " + std::to_string(i));
    (field == "exp_avg" ? m : v)[i] = t.to(parameters_[i].device()).clone();  // checkpoints are CPU
  }
  exp_avg_ = std::move(m);
  exp_avg_sq_ = std::move(v);
  steps_ = std::move(steps);
}

}  // namespace frugal::optim
