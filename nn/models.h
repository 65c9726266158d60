// The benchmark models of ../shared/BENCHMARKS.md, by name: cnn, mobilenet (depthwise-
// separable blocks) and mlp, for 1x28x28 inputs and 10 classes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/sequential.h"

namespace frugal::nn {

std::shared_ptr<Sequential> cnn();
std::shared_ptr<Sequential> mobilenet();
std::shared_ptr<Sequential> mlp();
// One of the above by name; a frugal::Error listing the names otherwise.
std::shared_ptr<Sequential> make_model(const std::string& name);
std::vector<std::string> model_names();

}  // namespace frugal::nn
