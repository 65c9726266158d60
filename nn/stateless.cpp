// Forwards and descriptions of the parameter-free layers.
#include "nn/stateless.h"

#include "common/error.h"
#include "engine/ops/dropout.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/pool.h"
#include "nn/conv.h"

namespace frugal::nn {

Tensor ReLU::forward(const Tensor& input) {
  if (!inplace) return relu(input);
  Tensor out = input;
  return out.relu_();
}

MaxPool2d::MaxPool2d(Int2 k, std::optional<Int2> s, Int2 p, Int2 d, bool ceil)
    : Module("MaxPool2d"),
      kernel_size(k),
      stride(s.value_or(k)),
      padding(p),
      dilation(d),
      ceil_mode(ceil) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + pair_text(kernel_size) + ", stride=" + pair_text(stride) +
         ", padding=" + pair_text(padding) + ", dilation=" + pair_text(dilation) +
         ", ceil_mode=" + (ceil_mode ? "true" : "false");
}

AvgPool2d::AvgPool2d(Int2 k, std::optional<Int2> s, Int2 p, bool ceil, bool include_pad)
    : Module("AvgPool2d"),
      kernel_size(k),
      stride(s.value_or(k)),
      padding(p),
      ceil_mode(ceil),
      count_include_pad(include_pad) {}

Tensor AvgPool2d::forward(const Tensor& input) {
  return avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + pair_text(kernel_size) + ", stride=" + pair_text(stride) +
         ", padding=" + pair_text(padding);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  return adaptive_avg_pool2d(input, output_size);
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return "output_size=" + pair_text(output_size);
}

Dropout::Dropout(double p) : Module("Dropout"), p(p) {
  FRUGAL_CHECK(p >= 0 && p <= 1,
               "Dropout: probability has to be between 0 and 1, but got " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& input) { return dropout(input, p, is_training()); }

std::string Dropout::extra_repr() const { return "p=" + std::to_string(p); }

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

}  // namespace frugal::nn
