// nn::Sequential: children applied in order, named "0", "1", ... as in PyTorch.
#pragma once

#include <initializer_list>

#include "nn/module.h"

namespace frugal::nn {

class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  // Appends a module under the next index; returns it.
  template <class M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    return register_module(std::to_string(size()), std::move(module));
  }
  std::size_t size() const { return named_children().size(); }
  const std::shared_ptr<Module>& operator[](std::size_t i) const {
    return named_children().at(i).second;
  }
  Tensor forward(const Tensor& input) override;
};

}  // namespace frugal::nn
