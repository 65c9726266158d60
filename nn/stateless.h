// The layers without parameters: ReLU, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Dropout and
// Flatten, each a thin Module over its op so that it can sit in a Sequential.
#pragma once

#include <optional>

#include "engine/ops/conv.h"
#include "nn/module.h"

namespace frugal::nn {

class ReLU : public Module {
 public:
  // inplace: overwrite the input (saves one activation; the input must not be needed later).
  explicit ReLU(bool inplace = false) : Module("ReLU"), inplace(inplace) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override { return inplace ? "inplace=true" : ""; }
  const bool inplace;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Int2 kernel_size, std::optional<Int2> stride = std::nullopt,
                     Int2 padding = {0, 0}, Int2 dilation = {1, 1}, bool ceil_mode = false);
  explicit MaxPool2d(std::int64_t kernel_size) : MaxPool2d(Int2{kernel_size, kernel_size}) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const Int2 kernel_size, stride, padding, dilation;
  const bool ceil_mode;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Int2 kernel_size, std::optional<Int2> stride = std::nullopt,
                     Int2 padding = {0, 0}, bool ceil_mode = false, bool count_include_pad = true);
  explicit AvgPool2d(std::int64_t kernel_size) : AvgPool2d(Int2{kernel_size, kernel_size}) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const Int2 kernel_size, stride, padding;
  const bool ceil_mode, count_include_pad;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Int2 output_size)
      : Module("AdaptiveAvgPool2d"), output_size(output_size) {}
  explicit AdaptiveAvgPool2d(std::int64_t size) : AdaptiveAvgPool2d(Int2{size, size}) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const Int2 output_size;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const double p;
};

// Flattens dims start_dim..end_dim into one (defaults: all but the batch dim).
class Flatten : public Module {
 public:
  explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& input) override { return input.flatten(start_dim, end_dim); }
  std::string extra_repr() const override;
  const std::int64_t start_dim, end_dim;
};

}  // namespace frugal::nn
