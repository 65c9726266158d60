// Sequential's forward: each output feeds the next module, and the previous activation is
// dropped as soon as the next one exists (autograd keeps what backward needs).
#include "nn/sequential.h"

#include "allocator/history.h"

namespace frugal::nn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Sequential() {
  for (const auto& m : modules) push_back(m);
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& [name, module] : named_children()) {
    const alloc::ScopedModuleTag module_tag(name, module->name());  // "features.3 (Conv2d)"
    x = module->forward(x);
  }
  return x;
}

}  // namespace frugal::nn
