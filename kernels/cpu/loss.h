// Classification losses over [n, c] rows with int64 class targets: nll_loss on
// log-probabilities, and the fused cross-entropy (log-softmax + nll) a training step uses.
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cpu {

enum class Reduction : std::uint8_t { None, Mean, Sum };

inline constexpr std::int64_t kDefaultIgnoreIndex = -100;

// Shared conventions, PyTorch's semantics. T: float, double, Half, BFloat16.
// - input/logits and grad_input: [n, c] contiguous; target: [n]; weight: [c] or null (all 1).
// - A row whose target equals ignore_index contributes nothing, neither to the loss nor to
//   the mean's denominator. Any other target outside [0, c) throws frugal::Error naming the
//   value and its position, before anything is written.
// - out: [n] for Reduction::None (0 for ignored rows), one value otherwise.
// - total_weight: one value, written by every forward: the sum of weight[target] over rows
//   not ignored (their count without weights). Mean divides by it (0/0 gives NaN, as in
//   PyTorch); the backward of Mean needs it.
// - grad_out: [n] for None, one value otherwise. grad_input is fully written.

template <class T>
void nll_loss_forward(const T* input, const std::int64_t* target, const T* weight, std::int64_t n,
                      std::int64_t c, Reduction reduction, std::int64_t ignore_index, T* out,
                      T* total_weight);

template <class T>
void nll_loss_backward(const T* grad_out, const std::int64_t* target, const T* weight,
                       std::int64_t n, std::int64_t c, Reduction reduction,
                       std::int64_t ignore_index, const T* total_weight, T* grad_input);

// cross_entropy = nll_loss(log_softmax(logits)) in one pass over the logits. For its backward
// save either log_probs ([n, c], written when not null) or, cheaper in memory, the logits
// themselves plus row_lse ([n]: each row's log-sum-exp, written when not null).
template <class T>
void cross_entropy_forward(const T* logits, const std::int64_t* target, const T* weight,
                           std::int64_t n, std::int64_t c, Reduction reduction,
                           std::int64_t ignore_index, T* out, T* total_weight, T* log_probs,
                           T* row_lse);

// grad_logits = scale * weight[target] * (softmax - onehot(target)), scale being grad_out
// (/ total_weight for Mean). The softmax comes from `saved`: exp(saved - row_lse[i]) when
// row_lse is not null (saved = the logits), else exp(saved) (saved = the log_probs).
// grad_logits may alias saved.
template <class T>
void cross_entropy_backward(const T* grad_out, const T* saved, const T* row_lse,
                            const std::int64_t* target, const T* weight, std::int64_t n,
                            std::int64_t c, Reduction reduction, std::int64_t ignore_index,
                            const T* total_weight, T* grad_logits);

}  // namespace frugal::kernels::cpu
