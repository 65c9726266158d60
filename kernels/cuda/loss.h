// The CUDA nll_loss and fused cross-entropy over [n, c] rows with int64 class targets,
// mirroring kernels/cpu/loss.h (same signatures and semantics) on device pointers.
#pragma once

#include <cstdint>

#include "common/half.h"
#include "kernels/cpu/loss.h"

namespace frugal::kernels::cuda {

using cpu::kDefaultIgnoreIndex;
using cpu::Reduction;

// T: float, double, Half, BFloat16; conventions as in kernels/cpu/loss.h. Every function first
// validates the targets on the device and copies the first bad position back: that
// synchronises the current stream (PyTorch uses a device assert instead), and a bad target
// throws frugal::Error naming the value and position before anything is written. The loss
// kernels then run asynchronously on the current stream. Row sums are deterministic (per-row
// values, then one block's tree sum, in double). With n == 0 the forward still writes
// total_weight (0) and the reduced out, as the CPU does.

template <class T>
void nll_loss_forward(const T* input, const std::int64_t* target, const T* weight, std::int64_t n,
                      std::int64_t c, Reduction reduction, std::int64_t ignore_index, T* out,
                      T* total_weight);

template <class T>
void nll_loss_backward(const T* grad_out, const std::int64_t* target, const T* weight,
                       std::int64_t n, std::int64_t c, Reduction reduction,
                       std::int64_t ignore_index, const T* total_weight, T* grad_input);

template <class T>
void cross_entropy_forward(const T* logits, const std::int64_t* target, const T* weight,
                           std::int64_t n, std::int64_t c, Reduction reduction,
                           std::int64_t ignore_index, T* out, T* total_weight, T* log_probs,
                           T* row_lse);

// grad_logits may alias saved.
template <class T>
void cross_entropy_backward(const T* grad_out, const T* saved, const T* row_lse,
                            const std::int64_t* target, const T* weight, std::int64_t n,
                            std::int64_t c, Reduction reduction, std::int64_t ignore_index,
                            const T* total_weight, T* grad_logits);

}  // namespace frugal::kernels::cuda
