// nn::quantized::quantize_dynamic: a model's Linear layers swapped for int8 DynamicLinear ones,
// as torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8).
#pragma once

#include <memory>

#include "nn/sequential.h"

namespace frugal::nn::quantized {

// A new Sequential with the same children under the same names, except that every Linear —
// in `model` or in a Sequential nested in it — is replaced by a DynamicLinear made from it.
// Other children are shared, not copied (the same module objects). The float model is left as
// it was; drop it to free its weights. The result is for CPU inference (in eval mode, as the
// model's children are). A Linear inside another kind of container cannot be replaced and is
// a frugal::Error naming its path, rather than a model left silently half in float.
std::shared_ptr<Sequential> quantize_dynamic(const Sequential& model);

}  // namespace frugal::nn::quantized
