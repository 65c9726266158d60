// One training step of frugal-train: forward and backward over a batch in micro-batches
// (gradient accumulation), under autocast when mixed precision is on, then the optimizer
// step through the GradScaler. Two of the memory techniques in one place a reader can follow.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "allocator/caching_allocator.h"
#include "nn/nn.h"

namespace frugal::train {

// --amp: off, or the 16-bit type of autocast. float16 needs loss scaling (its range ends at
// 65504 and its smallest subnormal is 6e-8); bfloat16 has float32's range and does not.
struct AmpMode {
  std::string name = "off";         // "off", "bf16" or "fp16"
  std::optional<ScalarType> dtype;  // none when off
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

// Out-of-memory recovery (--oom-recovery): what PyTorch users write by hand around a step.
struct OomRecovery {
  std::int64_t accum = 1;    // micro-batches per step now; grows on each retry and stays
  std::int64_t retries = 0;  // attempts that ran out of memory and were retried
  struct Retry {
    std::int64_t step = 0;          // the global step (1-based) that ran out
    std::int64_t from = 0, to = 0;  // its micro-batches before and after
    std::string message;            // the first line of the out-of-memory error
  };
  std::vector<Retry> history;
};

// train_step with `recovery.accum` micro-batches, and on an out-of-memory error in forward or
// backward: the step's graph (released as the error unwinds) and partial gradients are freed,
// batch norm's running statistics and the random generator are put back as they were before
// the step, `allocator`'s cache is emptied, and the same batch runs again in twice as many
// micro-batches (at most one image each), so the effective batch and the update stay those of
// the whole batch. The new count is kept for the steps after. An out-of-memory error in the
// optimizer's step (parameters partly updated, nothing to retry) or at one image per
// micro-batch is thrown on.
StepResult train_step_recovering(nn::Module& model, optim::Optimizer& optimizer,
                                 amp::GradScaler& scaler, const AmpMode& amp, const Tensor& images,
                                 const Tensor& targets, alloc::CachingAllocator& allocator,
                                 std::int64_t global_step, OomRecovery& recovery);

// What one training step holds, from the CPU allocator's exact counters, each counted from
// what was allocated when the measurement began (data sets loaded earlier are not included).
struct StepMemory {
  std::int64_t before = 0;       // the model, its optimizer state and the batch
  std::int64_t activations = 0;  // held by the graph after forward and loss (casts included)
  std::int64_t peak = 0;         // the step's peak allocated, everything above included
};

// One SGD step (momentum 0.9, through a GradScaler where `amp` needs one) of the benchmark
// model `model_name` (nn::make_model) on a random batch of `batch` images, seeded, measured
// after a warm-up step so that the momentum buffers exist as in every step but the first.
StepMemory measure_step_memory(const std::string& model_name, std::int64_t batch,
                               const AmpMode& amp);

// The measured truth the batch-size finder is compared with: the CPU allocator's peak
// allocated bytes over one float32 SGD step (momentum 0.9) of `model` on a random batch of
// `batch` 1x28x28 images, run after a warm-up step at batch 1 (momentum and gradients live)
// and from an empty cache, as the finder measures its steps; -1 on out-of-memory.
std::int64_t measure_step_peak(nn::Module& model, std::int64_t batch);

}  // namespace frugal::train
