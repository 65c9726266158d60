// The shared part of optimizers.
#include "nn/optim/optimizer.h"

#include "common/error.h"

namespace frugal::optim {

std::size_t Optimizer::state_entry_index(const std::string& name, const char* who) const {
  const std::size_t dot = name.find('.');
  const std::string index = name.substr(0, dot);
  FRUGAL_CHECK(dot != std::string::npos && !index.empty() && index.size() <= 9 &&
                   index.find_first_not_of("0123456789") == std::string::npos,
               std::string(who) + ".load_state_dict: unexpected entry '" + name +
                   "' (expected PARAMETER_INDEX.FIELD)");
  const std::size_t i = std::stoul(index);
  FRUGAL_CHECK(i < parameters_.size(), std::string(who) + ".load_state_dict: '" + name +
                                           "' names parameter " + index + " of " +
                                           std::to_string(parameters_.size()));
  return i;
}

Optimizer::Optimizer(std::vector<Tensor> parameters, double lr)
    : parameters_(std::move(parameters)) {
  FRUGAL_CHECK(!parameters_.empty(), "optimizer got an empty parameter list");
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    FRUGAL_CHECK(
        parameters_[i].defined() && parameters_[i].is_leaf() && parameters_[i].is_floating_point(),
        "optimizer: parameter " + std::to_string(i) +
            " must be a floating-point leaf tensor (a module parameter)");
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  FRUGAL_CHECK(lr >= 0, "optimizer: invalid learning rate " + std::to_string(lr));
  lr_ = lr;
}

void Optimizer::zero_grad(bool set_to_none) { nn::zero_grad(parameters_, set_to_none); }

Tensor Optimizer::gradient_for_update(std::size_t i, const char* op) const {
  const Tensor& p = parameters_[i];
  if (!p.grad().defined()) return {};
  Tensor g = p.grad().contiguous();
  FRUGAL_CHECK(p.is_contiguous() && g.sizes() == p.sizes() && g.dtype() == p.dtype() &&
                   g.device() == p.device(),
               std::string(op) + ": parameter " + std::to_string(i) + " " + dtype_name(p.dtype()) +
                   shape_string(p.sizes()) + " has a gradient " + dtype_name(g.dtype()) +
                   shape_string(g.sizes()) + " that does not match it");
  return g;
}

}  // namespace frugal::optim
