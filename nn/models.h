// The benchmark models of ../shared/BENCHMARKS.md, by name: cnn, mobilenet (depthwise-
// separable blocks) and mlp, for 1x28x28 inputs and 10 classes as defined there, or for the
// channels, size and classes of the data they are given.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/sequential.h"

namespace frugal::nn {

// What a model takes and predicts: [channels, height, width] images, `classes` logits.
struct ModelInput {
  std::int64_t channels = 1, height = 28, width = 28, classes = 10;
};

// At 1x28x28 with 10 classes each is exactly the benchmark's model. Otherwise the first layer
// takes `channels`, the last gives `classes`, and:
//  - cnn: after its two 2x2 max pools, an adaptive average pool down to at most 7x7 before
//    the classifier, so the classifier (and the parameter count) stays that of 28x28 inputs
//    for any larger image; inputs must be at least 4x4;
//  - mobilenet: global average pooling already makes it size-independent;
//  - mlp: the first Linear takes channels x height x width values.
std::shared_ptr<Sequential> cnn(const ModelInput& input = {});
std::shared_ptr<Sequential> mobilenet(const ModelInput& input = {});
std::shared_ptr<Sequential> mlp(const ModelInput& input = {});
// `blocks` conv 3x3 + BN-ReLU blocks of `channels` channels on 3-channel inputs, global
// average pooling and a linear classifier to 10 classes: the deep network activation
// checkpointing is measured on (bench/checkpoint.cpp, frugal-memlab checkpoint).
std::shared_ptr<Sequential> deep_convnet(int blocks, std::int64_t channels);
// One of the benchmark models by name; a frugal::Error listing the names otherwise, or naming
// an input it cannot take.
std::shared_ptr<Sequential> make_model(const std::string& name, const ModelInput& input = {});
std::vector<std::string> model_names();

}  // namespace frugal::nn
