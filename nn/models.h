// The benchmark models of ../shared/BENCHMARKS.md, by name: cnn, mobilenet (depthwise-
// separable blocks) and mlp, for 1x28x28 inputs and 10 classes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/sequential.h"

namespace frugal::nn {

std::shared_ptr<Sequential> cnn();
std::shared_ptr<Sequential> mobilenet();
std::shared_ptr<Sequential> mlp();
// `blocks` conv 3x3 + BN-ReLU blocks of `channels` channels on 3-channel inputs, global
// average pooling and a linear classifier to 10 classes: the deep network activation
// checkpointing is measured on (bench/checkpoint.cpp, frugal-memlab checkpoint).
std::shared_ptr<Sequential> deep_convnet(int blocks, std::int64_t channels);
// One of the benchmark models by name; a frugal::Error listing the names otherwise.
std::shared_ptr<Sequential> make_model(const std::string& name);
std::vector<std::string> model_names();

}  // namespace frugal::nn
