// One training step of frugal-train: forward and backward over a batch in micro-batches
// (gradient accumulation), under autocast when mixed precision is on, then the optimizer
// step through the GradScaler. Two of the memory techniques in one place a reader can follow.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nn/nn.h"

namespace frugal::train {

// --amp: off, or the 16-bit type of autocast. float16 needs loss scaling (its range ends at
// 65504 and its smallest subnormal is 6e-8); bfloat16 has float32's range and does not.
struct AmpMode {
  std::string name = "off";            // "off", "bf16" or "fp16"
  std::optional<ScalarType> dtype;     // none when off
  bool enabled() const { return dtype.has_value(); }
  bool needs_scaler() const { return dtype == kFloat16; }
};
// Parses --amp; anything but off, bf16 and fp16 is a frugal::ConfigError.
AmpMode parse_amp(const std::string& text);

struct StepResult {
  double loss_sum = 0;       // sum over the batch's images of their loss
  std::int64_t correct = 0;  // images whose argmax is the target
  bool stepped = true;       // false when the scaler skipped the step (inf/NaN gradients)
};

// zero_grad, then `accum` micro-batches (the batch split into near-equal slices; each slice's
// mean loss weighted by its share of the batch, 1/accum for equal slices, so the gradients add
// up to those of the whole batch), then scaler.step + update. Batch norm sees each micro-batch's
// own statistics, as it would with a smaller batch.
StepResult train_step(nn::Module& model, optim::Optimizer& optimizer, amp::GradScaler& scaler,
                      const AmpMode& amp, const Tensor& images, const Tensor& targets,
                      std::int64_t accum);

}  // namespace frugal::train
