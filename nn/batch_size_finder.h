// The batch-size finder: measures the peak allocated memory of two real training steps at
// small batches, fits peak = a + b * batch, proposes the largest batch whose predicted peak
// fits a memory budget, and verifies it with a real step (backing off on out-of-memory).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "allocator/caching_allocator.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"

namespace frugal::nn {

// One real training step the finder ran.
struct BatchSizeStep {
  std::string role;  // "warm-up", "probe" or "verify"
  std::int64_t batch = 0;
  std::int64_t peak_allocated =
      0;  // allocated_bytes.all.peak over the step (to the failure, on OOM)
  bool out_of_memory = false;
  bool fits = false;  // no OOM and peak_allocated <= budget
};

struct BatchSizeFinderOptions {
  // The two probe batches (distinct; the first also warms up the optimizer's state). The peak
  // of a step is the largest of several moments' totals, each linear in the batch, so it is
  // convex and piecewise linear: at small batches the moment with the fixed memory (weights,
  // gradients, optimizer state) may be the peak, and its smaller slope would under-predict
  // large batches. Probes of 16 and 32 sit where activations dominate for the models here;
  // the verifying steps refit over the widest span and correct what the probes miss.
  std::int64_t first_probe = 16;
  std::int64_t second_probe = 32;
  std::int64_t max_batch = 65536;
  // Real steps allowed after the probes to confirm, refine or back off the proposal.
  int max_verify_steps = 8;
  // After an out-of-memory error at batch B (no peak to refit with) the next try is B * backoff.
  double backoff = 0.9;
  // With budget 0 the budget is the allocator's limit less this share: the caching
  // allocator reserves more than it hands out (rounding, fragmentation), and a step whose
  // allocated peak equals the device's capacity would run out of memory.
  double device_headroom = 0.1;
  // For the Module overload: run forward and loss under AutocastGuard with this dtype
  // (bfloat16 or float16), as a mixed-precision training run does; its activations, and so
  // its peak, differ from float32's.
  std::optional<ScalarType> autocast;
};

struct BatchSizeResult {
  std::int64_t batch = 0;           // the largest batch verified to fit
  std::int64_t budget = 0;          // bytes
  double fixed_bytes = 0;           // a: the model, gradients, optimizer state, what else is held
  double bytes_per_sample = 0;      // b
  std::int64_t predicted_peak = 0;  // a + b * batch from the two probes
  std::int64_t measured_peak = 0;   // the peak of the real step at `batch`
  // batch + 1 was also tried and did not fit: `batch` is the largest that fits, measured
  // rather than predicted.
  bool next_batch_failed = false;
  std::vector<BatchSizeStep> steps;  // every step run, in order
  std::int64_t predict(std::int64_t b) const {
    return static_cast<std::int64_t>(fixed_bytes + bytes_per_sample * static_cast<double>(b));
  }
};

// Runs one whole training step (forward, loss, backward, optimizer step) at a batch size.
using TrainingStep = std::function<void(std::int64_t batch)>;

// The search over any training step whose tensors live in `allocator`. budget is in bytes of
// peak allocated memory; 0 means the allocator's limit (set_memory_limit, or the device's
// capacity; on a GPU at most what the allocator holds plus the device's free memory) less
// options.device_headroom; a larger budget is cut to that limit. The step must leave
// the program's state as it would leave a training step: the finder does not save or restore
// anything (the Module overload below does). A frugal::Error when even a step at batch 1 does not
// fit.
BatchSizeResult find_batch_size(const TrainingStep& step, alloc::CachingAllocator& allocator,
                                std::int64_t budget = 0,
                                const BatchSizeFinderOptions& options = {});

using OptimizerFactory =
    std::function<std::unique_ptr<optim::Optimizer>(const std::vector<Tensor>& parameters)>;

// For a classifier `model` (output [batch, classes]) trained with cross-entropy: each step is
// random float32 inputs of shape [batch, sample_shape...] and random labels on the model's
// device, forward, loss (under autocast when options.autocast is set), zero_grad, backward
// and a step of an optimizer made by make_optimizer over model.parameters() — frugal-train's step.
// The probes do not train the model: parameters, buffers, gradients, the training flag and the
// default generator are as before when it returns (the probe optimizer is discarded; its state
// never touches the caller's optimizer). budget 0: the limit of the model's device allocator, less
// headroom.
BatchSizeResult find_batch_size(Module& model, const OptimizerFactory& make_optimizer,
                                const std::vector<std::int64_t>& sample_shape,
                                std::int64_t budget = 0,
                                const BatchSizeFinderOptions& options = {});

// A training step of the caller's own (another loss, gradient accumulation, a GradScaler: for
// frugal-train, train::train_step on random images and labels) run on the optimizer the finder
// made, with the model's state saved and restored as above. State the step keeps elsewhere (a
// GradScaler's scale) is the caller's to reset.
using ModelTrainingStep = std::function<void(std::int64_t batch, optim::Optimizer& optimizer)>;
BatchSizeResult find_batch_size(Module& model, const OptimizerFactory& make_optimizer,
                                const ModelTrainingStep& step, std::int64_t budget = 0,
                                const BatchSizeFinderOptions& options = {});

// A one-paragraph account of the result: the fit, the chosen batch, predicted against measured.
std::string describe(const BatchSizeResult& result);

}  // namespace frugal::nn
