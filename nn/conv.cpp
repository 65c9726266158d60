// Conv2d: parameters, default initialisation, forward through the conv2d op.
#include "nn/conv.h"

#include <cmath>

#include "common/error.h"
#include "engine/ops/factory.h"
#include "nn/init.h"

namespace frugal::nn {

Conv2d::Conv2d(const Conv2dOptions& o) : Module("Conv2d"), options(o) {
  FRUGAL_CHECK(o.in_channels_ > 0 && o.out_channels_ > 0 && o.groups_ > 0 &&
                   o.in_channels_ % o.groups_ == 0 && o.out_channels_ % o.groups_ == 0,
               "Conv2d: in_channels=" + std::to_string(o.in_channels_) +
                   " and out_channels=" + std::to_string(o.out_channels_) +
                   " must be positive and divisible by groups=" + std::to_string(o.groups_));
  FRUGAL_CHECK(o.kernel_size_[0] > 0 && o.kernel_size_[1] > 0,
               "Conv2d: kernel size must be positive");
  weight =
      empty({o.out_channels_, o.in_channels_ / o.groups_, o.kernel_size_[0], o.kernel_size_[1]});
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", weight);
  if (o.bias_) {
    bias = empty({o.out_channels_});
    const double bound = 1.0 / std::sqrt(static_cast<double>(init::fan_in(weight)));
    init::uniform_(bias, -bound, bound);
    register_parameter("bias", bias);
  }
}

Tensor Conv2d::forward(const Tensor& input) {
  return conv2d(input, weight, bias, options.stride_, options.padding_, options.dilation_,
                options.groups_);
}

std::string pair_text(Int2 v) {
  std::string s = "(";  // appended piecewise: GCC 12 misreports "(" + std::string (bug 105651)
  s += std::to_string(v[0]);
  s += ", ";
  s += std::to_string(v[1]);
  s += ')';
  return s;
}

std::string Conv2d::extra_repr() const {
  const auto pair = pair_text;
  std::string s =
      std::to_string(options.in_channels_) + ", " + std::to_string(options.out_channels_) +
      ", kernel_size=" + pair(options.kernel_size_) + ", stride=" + pair(options.stride_);
  if (options.padding_ != Int2{0, 0}) s += ", padding=" + pair(options.padding_);
  if (options.dilation_ != Int2{1, 1}) s += ", dilation=" + pair(options.dilation_);
  if (options.groups_ != 1) s += ", groups=" + std::to_string(options.groups_);
  if (!options.bias_) s += ", bias=false";
  return s;
}

}  // namespace frugal::nn
