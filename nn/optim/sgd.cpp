// SGD's step through the fused kernel, and its momentum buffers as state.
#include "nn/optim/sgd.h"

#include <map>

#include "common/error.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"

namespace frugal::optim {

SGD::SGD(std::vector<Tensor> parameters, const SGDOptions& o)
    : Optimizer(std::move(parameters), o.lr_), options_(o), momentum_buffers_(parameters_.size()) {
  FRUGAL_CHECK(o.momentum_ >= 0 && o.weight_decay_ >= 0,
               "SGD: momentum and weight_decay must be non-negative");
  FRUGAL_CHECK(!o.nesterov_ || (o.momentum_ > 0 && o.dampening_ == 0),
               "SGD: Nesterov momentum requires a momentum and zero dampening");
}

void SGD::step() {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& p = parameters_[i];
    const Tensor g = gradient_for_update(i, "SGD");
    if (!g.defined()) continue;
    const bool first = options_.momentum_ != 0 && !momentum_buffers_[i].defined();
    if (first) momentum_buffers_[i] = empty(p.sizes(), p.options());
    dispatch_master(p.dtype(), "SGD", [&]<class T>() {
      FRUGAL_KERNEL(p.device(), sgd_step<T>)
      (p.data_ptr<T>(), g.data_ptr<T>(),
       options_.momentum_ != 0 ? momentum_buffers_[i].data_ptr<T>() : nullptr, p.numel(), lr_,
       options_.momentum_, options_.dampening_, options_.weight_decay_, options_.nesterov_, first);
    });
    p.impl()->storage()->bump_version();
  }
}

nn::NamedTensors SGD::state_dict() const {
  nn::NamedTensors out;
  for (std::size_t i = 0; i < momentum_buffers_.size(); ++i)
    if (momentum_buffers_[i].defined())
      out.emplace_back(std::to_string(i) + ".momentum_buffer", momentum_buffers_[i]);
  return out;
}

void SGD::load_state_dict(const nn::NamedTensors& state) {
  std::vector<Tensor> loaded(parameters_.size());
  for (const auto& [name, t] : state) {
    const std::size_t i = state_entry_index(name, "SGD");
    FRUGAL_CHECK(name.substr(name.find('.')) == ".momentum_buffer",
                 "SGD.load_state_dict: unexpected entry '" + name + "'");
    FRUGAL_CHECK(t.sizes() == parameters_[i].sizes() && t.dtype() == parameters_[i].dtype(),
                 "SGD.load_state_dict: '" + name + "' " + dtype_name(t.dtype()) +
                     shape_string(t.sizes()) + " does not match a parameter of this optimizer");
    loaded[i] = t.to(parameters_[i].device()).clone();  // a checkpoint holds CPU tensors
  }
  momentum_buffers_ = std::move(loaded);
}

}  // namespace frugal::optim
