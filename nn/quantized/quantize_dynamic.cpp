// quantize_dynamic: rebuilds a Sequential tree with each Linear replaced by a DynamicLinear.
#include "nn/quantized/quantize_dynamic.h"

#include "common/error.h"
#include "nn/quantized/linear.h"

namespace frugal::nn::quantized {
namespace {

// Throws if a Linear hides below `module` (a non-Sequential container) at `path`.
void check_no_linear_below(const Module& module, const std::string& path) {
  for (const auto& [name, child] : module.named_children()) {
    const std::string child_path = path + "." + name;
    FRUGAL_CHECK(dynamic_cast<const Linear*>(child.get()) == nullptr,
                 "quantize_dynamic: the Linear at '" + child_path + "' sits inside a " +
                     module.name() + ", which quantize_dynamic cannot rebuild (only Sequential)");
    check_no_linear_below(*child, child_path);
  }
}

std::shared_ptr<Sequential> rebuild(const Sequential& model, const std::string& prefix) {
  auto out = std::make_shared<Sequential>();
  for (const auto& [name, child] : model.named_children()) {
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    std::shared_ptr<Module> replacement;
    if (const auto* linear = dynamic_cast<const Linear*>(child.get())) {
      replacement = std::make_shared<DynamicLinear>(*linear);
    } else if (const auto* seq = dynamic_cast<const Sequential*>(child.get())) {
      replacement = rebuild(*seq, path);
    } else {
      check_no_linear_below(*child, path);
      replacement = child;
    }
    out->push_back(replacement);
  }
  out->train(model.is_training());  // the mode the model was in (children shared keep it)
  return out;
}

}  // namespace

std::shared_ptr<Sequential> quantize_dynamic(const Sequential& model) { return rebuild(model, ""); }

}  // namespace frugal::nn::quantized
