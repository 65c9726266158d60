// frugal-train's checkpoints: one safetensors file holding the model ("model.<name>"), the
// optimizer state ("optimizer.<name>"), the fp16 loss scaler's ("scaler.<name>") and, in its
// metadata, where training stood (epoch, step, RNG state), so that --resume continues exactly
// where a run stopped.
#pragma once

#include <cstdint>
#include <string>

#include "nn/nn.h"

namespace frugal::train {

struct TrainState {
  std::string model;               // the --model it was made with
  std::string optimizer;           // "sgd" or "adamw"
  std::string lr_schedule;         // "constant" or "cosine"
  std::string amp = "off";         // "off", "bf16" or "fp16"
  std::int64_t epoch = 0;          // the epoch in progress (0-based)
  std::int64_t step_in_epoch = 0;  // batches of that epoch already done
  std::int64_t global_step = 0;
  std::uint64_t seed = 0;  // the run's --seed (the loader's order depends on it)
  std::uint64_t rng_seed = 0, rng_offset = 0;  // the default generator
  // The epoch in progress so far, so that a run resumed mid-epoch reports the same epoch.
  double epoch_loss_sum = 0;
  std::int64_t epoch_seen = 0, epoch_correct = 0;
};

// Writes atomically (a run killed while saving leaves the previous file intact), with the
// crc32 of every tensor in the metadata, checked by load_checkpoint; and beside it
// PATH.digest.json: dtype, shape and crc32 of every tensor as held in memory, for
// bench/check_checkpoint.py to compare with what it reads from the file.
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer& optimizer, const amp::GradScaler& scaler,
                     const TrainState& state);
// Restores model, optimizer, scaler and the default generator; returns where training stood. A
// file made for another model, optimizer, schedule or amp mode than `expect` names is a
// frugal::Error saying so, and so is a tensor whose bytes do not match the crc32 saved with
// it (a file damaged after it was written).
TrainState load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& optimizer,
                           amp::GradScaler& scaler, const TrainState& expect);

}  // namespace frugal::train
