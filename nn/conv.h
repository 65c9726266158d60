// nn::Conv2d: 2-D convolution with stride, padding, dilation and groups (groups == channels
// makes it depthwise), weight [out, in / groups, kH, kW], initialised as PyTorch's.
#pragma once

#include "engine/ops/conv.h"
#include "nn/module.h"

namespace frugal::nn {

struct Conv2dOptions {
  Conv2dOptions(std::int64_t in_channels, std::int64_t out_channels, Int2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  Conv2dOptions(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size)
      : Conv2dOptions(in_channels, out_channels, Int2{kernel_size, kernel_size}) {}
  // libtorch-style chained setters: Conv2dOptions(32, 64, 3).stride(2).padding(1).bias(false)
  Conv2dOptions& stride(std::int64_t s) {
    stride_ = {s, s};
    return *this;
  }
  Conv2dOptions& padding(std::int64_t p) {
    padding_ = {p, p};
    return *this;
  }
  Conv2dOptions& dilation(std::int64_t d) {
    dilation_ = {d, d};
    return *this;
  }
  Conv2dOptions& groups(std::int64_t g) {
    groups_ = g;
    return *this;
  }
  Conv2dOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }

  std::int64_t in_channels_, out_channels_;
  Int2 kernel_size_;
  Int2 stride_{1, 1}, padding_{0, 0}, dilation_{1, 1};
  std::int64_t groups_ = 1;
  bool bias_ = true;
};

// "(3, 3)": how describe() shows a pair of sizes.
std::string pair_text(Int2 v);

class Conv2d : public Module {
 public:
  explicit Conv2d(const Conv2dOptions& options);
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size)
      : Conv2d(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight;
  Tensor bias;  // undefined with bias(false)
  const Conv2dOptions options;
};

}  // namespace frugal::nn
