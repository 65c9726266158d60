// nn::quantized::DynamicLinear: a trained nn::Linear with its weight stored in int8 (a quarter
// of its float32 bytes) for CPU inference, as PyTorch's torch.ao.nn.quantized.dynamic.Linear.
#pragma once

#include "nn/linear.h"

namespace frugal::nn::quantized {

// Weight: int8, symmetric per output channel (scale_j = max_k |W[j, k]| / 127, no zero point).
// frugal has no int8 dtype, so `weight` is a kUInt8 tensor holding the int8 values' two's-
// complement bytes. Activations are quantized on every forward ("dynamic"): per row of the
// input, asymmetric uint8 over [min(0, min x), max(0, max x)] — PyTorch uses one range for the
// whole tensor; a range per row costs nothing more and loses less. Then a uint8 x int8 GEMM with
// int32 sums (kernels/cpu/quantized_gemm.h), the float rescale and the float32 bias.
// Inference only: forward records no autograd history, and refuses (frugal::Error) an input
// that requires grad while grad mode is on, rather than return an output that silently has
// no gradient. CPU only: a CUDA input or module is a frugal::Error.
class DynamicLinear : public Module {
 public:
  explicit DynamicLinear(const Linear& linear);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  // The weight as float32, scale_j * q[j, k] (what the int8 values stand for).
  Tensor dequantized_weight() const;

  Tensor weight;        // [out, in] kUInt8 holding int8 (two's complement)
  Tensor weight_scale;  // [out] float32
  Tensor weight_sum;    // [out] int32: sum_k q[j, k], for the activations' zero points
  Tensor bias;          // [out] float32, undefined without bias
  const std::int64_t in_features, out_features;
};

}  // namespace frugal::nn::quantized
