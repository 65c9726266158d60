// The shared part of optimizers.
#include "nn/optim/optimizer.h"

#include "common/error.h"

namespace frugal::optim {

Optimizer::Optimizer(std::vector<Tensor> parameters, double lr) : parameters_(std::move(parameters)) {
  FRUGAL_CHECK(!parameters_.empty(), "optimizer got an empty parameter list");
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    FRUGAL_CHECK(parameters_[i].defined() && parameters_[i].is_leaf() && parameters_[i].is_floating_point(),
                 "optimizer: parameter " + std::to_string(i) +
                     " must be a floating-point leaf tensor (a module parameter)");
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  FRUGAL_CHECK(lr >= 0, "optimizer: invalid learning rate " + std::to_string(lr));
  lr_ = lr;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters_) {
    Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) g = Tensor();
    else g.zero_();
  }
}

}  // namespace frugal::optim
