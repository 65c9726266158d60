// DynamicLinear: quantizes a Linear's weight once, and each input on the fly, in row chunks so
// that the temporaries (the uint8 rows being multiplied) stay small whatever the batch.
#include "nn/quantized/linear.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/factory.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/quantized_gemm.h"

namespace frugal::nn::quantized {
namespace {

// Input rows quantized and multiplied at a time by one thread: the temporaries are
// threads * kChunkRows * in_features bytes plus 8 bytes a row (the int32 sums are rescaled to
// float as they come out of the dot products, never stored).
constexpr std::int64_t kChunkRows = 64;

std::string layer_text(std::int64_t in, std::int64_t out) {
  return "DynamicLinear(in_features=" + std::to_string(in) +
         ", out_features=" + std::to_string(out) + ")";
}

}  // namespace

DynamicLinear::DynamicLinear(const Linear& linear)
    : Module("DynamicLinear"), in_features(linear.in_features), out_features(linear.out_features) {
  const std::string name = layer_text(in_features, out_features);
  FRUGAL_CHECK(linear.weight.is_cpu(),
               name + ": the Linear's weight is on " + linear.weight.device().str() +
                   "; quantization is CPU only (move the model to the CPU first)");
  FRUGAL_CHECK(linear.weight.dtype() == kFloat32, name + ": the Linear's weight is " +
                                                      dtype_name(linear.weight.dtype()) +
                                                      "; quantize_dynamic takes a float32 model");
  FRUGAL_CHECK(in_features <= kernels::cpu::kMaxQuantizedGemmK,
               name + ": in_features above " + std::to_string(kernels::cpu::kMaxQuantizedGemmK) +
                   " could overflow the int32 sums");
  const NoGradGuard no_grad;
  const Tensor w = linear.weight.detach().contiguous();
  weight = empty({out_features, in_features}, kUInt8);
  weight_scale = empty({out_features}, kFloat32);
  weight_sum = empty({out_features}, kInt32);
  const std::int64_t bad = kernels::cpu::quantize_rows_symmetric_s8(
      w.data_ptr<float>(), out_features, in_features,
      reinterpret_cast<std::int8_t*>(weight.data_ptr<std::uint8_t>()),
      weight_scale.data_ptr<float>(), weight_sum.data_ptr<std::int32_t>());
  FRUGAL_CHECK(bad < 0, name + ": row " + std::to_string(bad) +
                            " of the Linear's weight holds inf or NaN, which cannot be quantized");
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
               name + ": expected an input whose last dimension is " + std::to_string(in_features) +
                   ", got shape " + shape_string(input.sizes()));
  FRUGAL_CHECK(!(input.requires_grad() && GradMode::is_enabled()),
               name +
                   " is inference-only (no gradients flow through it): call it under "
                   "NoGradGuard or InferenceMode, or with an input that does not require grad");
  FRUGAL_CHECK(
      weight_scale.dtype() == kFloat32 && (!bias.defined() || bias.dtype() == kFloat32),
      name + ": its scales and bias must stay float32 (was the module converted with to()?)");

  const NoGradGuard no_grad;
  const Tensor x = input.contiguous();
  const std::int64_t rows = x.numel() / in_features;
  std::vector<std::int64_t> out_sizes(input.sizes().begin(), input.sizes().end());
  out_sizes.back() = out_features;
  Tensor y = empty(out_sizes, kFloat32);
  if (rows == 0) return y;

  // Large batches: one parallel region for the whole layer, each thread quantizing,
  // multiplying and rescaling its own rows, chunk by chunk, in its own slot of the scratch
  // (a region per kernel costs a fork and a barrier each, which a loaded machine makes
  // expensive). Small batches: one task, and the GEMM splits the weight rows between threads.
  const std::int64_t threads = kernels::cpu::get_num_threads();
  const std::int64_t tasks = rows >= 4 * threads ? threads : 1;
  const std::int64_t chunk = std::min((rows + tasks - 1) / tasks, kChunkRows);
  const Tensor qx = empty({tasks, chunk, in_features}, kUInt8);
  const Tensor x_scale = empty({rows}, kFloat32);
  const Tensor x_zero_point = empty({rows}, kInt32);
  const float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  std::uint8_t* qp = qx.data_ptr<std::uint8_t>();
  float* sp = x_scale.data_ptr<float>();
  std::int32_t* zp = x_zero_point.data_ptr<std::int32_t>();
  const auto* wq = reinterpret_cast<const std::int8_t*>(weight.data_ptr<std::uint8_t>());
  const float* ws = weight_scale.data_ptr<float>();
  const std::int32_t* wsum = weight_sum.data_ptr<std::int32_t>();
  const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
  std::atomic<std::int64_t> bad_row{-1};  // no exception may leave a parallel region
  const auto run_rows = [&](std::int64_t slot, std::int64_t begin, std::int64_t end) {
    std::uint8_t* q = qp + slot * chunk * in_features;
    for (std::int64_t r0 = begin; r0 < end; r0 += chunk) {
      const std::int64_t n = std::min(chunk, end - r0);
      const std::int64_t bad = kernels::cpu::quantize_rows_asymmetric_u8(
          xp + r0 * in_features, n, in_features, q, sp + r0, zp + r0);
      if (bad >= 0) bad_row.store(r0 + bad);
      kernels::cpu::quantized_linear_u8s8(n, out_features, in_features, q, in_features, wq,
                                          in_features, sp + r0, zp + r0, ws, wsum, bp,
                                          yp + r0 * out_features, out_features);
    }
  };
  if (tasks == 1) {
    run_rows(0, 0, rows);
  } else {
    kernels::cpu::parallel_for(0, tasks, 1, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) run_rows(t, rows * t / tasks, rows * (t + 1) / tasks);
    });
  }
  FRUGAL_CHECK(bad_row.load() < 0,
               name + ": input row " + std::to_string(bad_row.load()) +
                   " holds a non-finite value (inf or NaN cannot be quantized)");
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
