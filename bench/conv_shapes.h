// The convolution layers of the benchmark models (../shared/BENCHMARKS.md), with the input
// size each sees on 28x28 Fashion-MNIST images. Every one is followed by batch norm, so none
// has a bias. bench/torch/conv_layers.py lists the same shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frugal::bench {

struct ConvShape {
  std::string name;
  std::int64_t in_channels, out_channels, size;  // input is size x size
  std::int64_t kernel, stride, padding, groups;
  bool input_needs_grad;  // false for the first layer, whose input is the data
};

inline std::vector<ConvShape> conv_shapes(const std::string& model) {
  if (model == "cnn")
    return {{"conv1 1->32 3x3 @28", 1, 32, 28, 3, 1, 1, 1, false},
            {"conv2 32->32 3x3 @28", 32, 32, 28, 3, 1, 1, 1, true},
            {"conv3 32->64 3x3 @14", 32, 64, 14, 3, 1, 1, 1, true},
            {"conv4 64->64 3x3 @14", 64, 64, 14, 3, 1, 1, 1, true}};
  if (model == "mobilenet")
    return {{"stem 1->32 3x3 @28", 1, 32, 28, 3, 1, 1, 1, false},
            {"dw1 32 3x3 s1 @28", 32, 32, 28, 3, 1, 1, 32, true},
            {"pw1 32->64 1x1 @28", 32, 64, 28, 1, 1, 0, 1, true},
            {"dw2 64 3x3 s2 @28", 64, 64, 28, 3, 2, 1, 64, true},
            {"pw2 64->128 1x1 @14", 64, 128, 14, 1, 1, 0, 1, true},
            {"dw3 128 3x3 s1 @14", 128, 128, 14, 3, 1, 1, 128, true},
            {"pw3 128->128 1x1 @14", 128, 128, 14, 1, 1, 0, 1, true},
            {"dw4 128 3x3 s2 @14", 128, 128, 14, 3, 2, 1, 128, true},
            {"pw4 128->256 1x1 @7", 128, 256, 7, 1, 1, 0, 1, true}};
  return {};
}

}  // namespace frugal::bench
