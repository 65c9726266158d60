// The parts frugal-train puts together before its loop: the optimizer and learning-rate
// schedule a run names, the batch the finder chooses, batches moved to the device, evaluation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "examples/train/data_source.h"
#include "examples/train/step.h"
#include "nn/nn.h"

namespace frugal::train {

// --optimizer sgd or adamw over `parameters`; a ConfigError naming the flag for anything else.
std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name,
                                                 const std::vector<Tensor>& parameters, double lr,
                                                 double momentum, double weight_decay);

// The learning-rate schedule, stepped after every optimizer step (so its "epochs" are steps):
// none for "constant"; cosine decay from the base rate to 0 over all the run's steps.
std::unique_ptr<optim::LRScheduler> make_schedule(const std::string& name,
                                                  optim::Optimizer& optimizer,
                                                  std::int64_t total_steps);

// --auto-batch-size: probe steps of this very step (amp, accumulation, checkpointing) on random
// images and a throw-away optimizer, the model coming back untouched; prints the fit and returns
// the batch chosen for `budget` (0: the device allocator's limit less headroom). A frugal::Error
// when --accum is more than that batch.
std::int64_t auto_batch_size(nn::Module& model, const nn::OptimizerFactory& make_optimizer,
                             const AmpMode& amp, const nn::ModelInput& input, Device device,
                             std::int64_t accum, std::int64_t budget);

// A batch on the device the model trains on. For a CUDA device through pinned memory, so the
// copy is queued on the copy stream and the host goes on at once.
Tensor to_device(const Tensor& t, Device device);

// Accuracy on the test set, in evaluation mode and without autograd (under the run's autocast).
double evaluate(nn::Module& model, DataSource& source, std::int64_t batch_size, Device device,
                const AmpMode& amp);

}  // namespace frugal::train
