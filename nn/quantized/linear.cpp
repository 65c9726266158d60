// DynamicLinear: quantizes a Linear's weight once, and each input on the fly, in row chunks so
// that the temporaries (uint8 input, int32 sums) stay small whatever the batch.
#include "nn/quantized/linear.h"

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/factory.h"
#include "kernels/cpu/quantized_gemm.h"

namespace frugal::nn::quantized {
namespace {

// Input rows quantized and multiplied at a time: the temporaries are kChunkRows * in_features
// bytes plus 8 bytes a row. The int32 sums go straight into the output's memory (4 bytes an
// element, like the floats that replace them), so they cost nothing extra.
constexpr std::int64_t kChunkRows = 128;

std::string layer_text(std::int64_t in, std::int64_t out) {
  return "DynamicLinear(in_features=" + std::to_string(in) +
         ", out_features=" + std::to_string(out) + ")";
}

}  // namespace

DynamicLinear::DynamicLinear(const Linear& linear)
    : Module("DynamicLinear"), in_features(linear.in_features), out_features(linear.out_features) {
  const std::string name = layer_text(in_features, out_features);
  FRUGAL_CHECK(linear.weight.is_cpu(), name + ": the Linear's weight is on " +
                                           linear.weight.device().str() +
                                           "; quantization is CPU only (move the model to the CPU first)");
  FRUGAL_CHECK(linear.weight.dtype() == kFloat32,
               name + ": the Linear's weight is " + dtype_name(linear.weight.dtype()) +
                   "; quantize_dynamic takes a float32 model");
  FRUGAL_CHECK(in_features <= kernels::cpu::kMaxQuantizedGemmK,
               name + ": in_features above " + std::to_string(kernels::cpu::kMaxQuantizedGemmK) +
                   " could overflow the int32 sums");
  const NoGradGuard no_grad;
  const Tensor w = linear.weight.detach().contiguous();
  weight = empty({out_features, in_features}, kUInt8);
  weight_scale = empty({out_features}, kFloat32);
  weight_sum = empty({out_features}, kInt32);
  kernels::cpu::quantize_rows_symmetric_s8(
      w.data_ptr<float>(), out_features, in_features,
      reinterpret_cast<std::int8_t*>(weight.data_ptr<std::uint8_t>()),
      weight_scale.data_ptr<float>(), weight_sum.data_ptr<std::int32_t>());
  register_buffer("weight", weight);
  register_buffer("weight_scale", weight_scale);
  register_buffer("weight_sum", weight_sum);
  if (linear.bias.defined()) {
    bias = linear.bias.detach().to(kFloat32).clone();
    register_buffer("bias", bias);
  }
}

Tensor DynamicLinear::forward(const Tensor& input) {
  const std::string name = layer_text(in_features, out_features);
  FRUGAL_CHECK(input.defined(), name + ": the input is an undefined tensor");
  FRUGAL_CHECK(input.is_cpu() && weight.is_cpu(),
               name + ": got a tensor on " + (input.is_cpu() ? weight : input).device().str() +
                   "; dynamic quantization runs on the CPU only");
  FRUGAL_CHECK(input.dtype() == kFloat32,
               name + ": expected a float32 input, got " + dtype_name(input.dtype()));
  FRUGAL_CHECK(input.dim() >= 1 && input.size(-1) == in_features,
               name + ": expected an input whose last dimension is " +
                   std::to_string(in_features) + ", got shape " + shape_string(input.sizes()));
  FRUGAL_CHECK(!(input.requires_grad() && GradMode::is_enabled()),
               name + " is inference-only (no gradients flow through it): call it under "
                      "NoGradGuard or InferenceMode, or with an input that does not require grad");
  FRUGAL_CHECK(weight_scale.dtype() == kFloat32 && (!bias.defined() || bias.dtype() == kFloat32),
               name + ": its scales and bias must stay float32 (was the module converted with to()?)");

  const NoGradGuard no_grad;
  const Tensor x = input.contiguous();
  const std::int64_t rows = x.numel() / in_features;
  std::vector<std::int64_t> out_sizes(input.sizes().begin(), input.sizes().end());
  out_sizes.back() = out_features;
  Tensor y = empty(out_sizes, kFloat32);
  if (rows == 0) return y;

  const std::int64_t chunk = std::min(rows, kChunkRows);
  const Tensor qx = empty({chunk, in_features}, kUInt8);
  const Tensor x_scale = empty({chunk}, kFloat32);
  const Tensor x_zero_point = empty({chunk}, kInt32);
  const float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const auto* wq = reinterpret_cast<const std::int8_t*>(weight.data_ptr<std::uint8_t>());
  const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
  for (std::int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const std::int64_t n = std::min(chunk, rows - r0);
    kernels::cpu::quantize_rows_asymmetric_u8(xp + r0 * in_features, n, in_features,
                                              qx.data_ptr<std::uint8_t>(),
                                              x_scale.data_ptr<float>(),
                                              x_zero_point.data_ptr<std::int32_t>());
    auto* acc = reinterpret_cast<std::int32_t*>(yp + r0 * out_features);
    kernels::cpu::gemm_u8s8s32(n, out_features, in_features, qx.data_ptr<std::uint8_t>(),
                               in_features, wq, in_features, acc, out_features);
    kernels::cpu::dequantize_linear_output(
        acc, n, out_features, x_scale.data_ptr<float>(),
        x_zero_point.data_ptr<std::int32_t>(), weight_scale.data_ptr<float>(),
        weight_sum.data_ptr<std::int32_t>(), bp, yp + r0 * out_features);
  }
  return y;
}

Tensor DynamicLinear::dequantized_weight() const {
  FRUGAL_CHECK(weight.is_cpu(), "DynamicLinear::dequantized_weight: CPU only");
  Tensor w = empty({out_features, in_features}, kFloat32);
  const auto* q = reinterpret_cast<const std::int8_t*>(weight.data_ptr<std::uint8_t>());
  const float* s = weight_scale.data_ptr<float>();
  float* out = w.data_ptr<float>();
  for (std::int64_t j = 0; j < out_features; ++j)
    for (std::int64_t k = 0; k < in_features; ++k)
      out[j * in_features + k] = s[j] * static_cast<float>(q[j * in_features + k]);
  return w;
}

std::string DynamicLinear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) +
         ", out_features=" + std::to_string(out_features) +
         ", bias=" + (bias.defined() ? "true" : "false") +
         ", dtype=qint8, qscheme=per_channel_symmetric";
}

}  // namespace frugal::nn::quantized
