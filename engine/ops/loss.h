// Classification losses with int64 class targets: cross_entropy on logits and nll_loss on
// log-probabilities, PyTorch's semantics (class weights, ignore_index, reductions).
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace frugal {

enum class Reduction : std::uint8_t { None, Mean, Sum };
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;

struct LossOptions {
  Tensor weight;  // [C] class weights, or undefined (all 1)
  Reduction reduction = Reduction::Mean;
  std::int64_t ignore_index = -100;
};

// input [N, C] logits, target [N] class indices. Fused: one pass computes the log-sum-exp
// of each row; the backward keeps the logits and those N values, not an [N, C] softmax.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const LossOptions& options = {});
// input [N, C] log-probabilities (log_softmax's output), target [N].
Tensor nll_loss(const Tensor& input, const Tensor& target, const LossOptions& options = {});

}  // namespace frugal
