// The shared part of optimizers.
#include "nn/optim/optimizer.h"

#include "common/error.h"

namespace frugal::optim {

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
