// amp::GradScaler: dynamic loss scaling for float16 training, with PyTorch's semantics and
// defaults, so that gradients too small for float16 survive the backward pass.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>

#include "engine/tensor.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"

namespace frugal::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;   // the scale grows by this after growth_interval clean steps
  double backoff_factor = 0.5;  // and shrinks by this after a step with inf/NaN gradients
  std::int64_t growth_interval = 2000;
  bool enabled = true;  // disabled: scale() is the identity, step() a plain step
};

// The loop (PyTorch's):
//   scaler.scale(loss).backward();        // as many micro-batches as accumulation wants
//   scaler.unscale_(optimizer);           // optional: before clipping the true gradients
//   nn::utils::clip_grad_norm_(params, 1.0);
//   scaler.step(optimizer);               // skipped when a gradient holds inf or NaN
//   scaler.update();                      // backoff after a skip, growth after a clean run
// The scale stays fixed between two update() calls, so accumulated micro-batches share it.
// It is kept on the host: scale() costs no device read, and step() reads one flag per device.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // loss (or any output) times the current scale, in the loss's dtype and device.
  Tensor scale(const Tensor& loss) const;

  // Divides the optimizer's gradients by the scale, in place, noting whether any holds inf or
  // NaN. At most once per optimizer between update() calls, and not after its step(): both
  // are errors, as in PyTorch.
  void unscale_(optim::Optimizer& optimizer);

  // unscale_ (unless already done), then optimizer.step() unless a gradient held inf or NaN.
  // Returns whether the optimizer stepped. A second step() before update() is an error.
  bool step(optim::Optimizer& optimizer);

  // The scale for the next iteration: times backoff_factor if any optimizer met inf/NaN since
  // the last update (the growth count restarts), else times growth_factor once growth_interval
  // clean updates in a row have passed. Forgets which optimizers were unscaled or stepped.
  void update();
  // Sets the scale explicitly instead (PyTorch's update(new_scale)); must be > 0.
  void update(double new_scale);

  double get_scale() const { return enabled_ ? scale_ : 1.0; }
  std::int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return enabled_; }
  const GradScalerOptions& options() const { return options_; }

  // For checkpoints: "scale", "growth_factor", "backoff_factor", "growth_interval" and
  // "_growth_tracker" as 0-d float64/int64 tensors (PyTorch's state_dict keys).
  nn::NamedTensors state_dict() const;
  void load_state_dict(const nn::NamedTensors& state);

 private:
  enum class Stage { kReady, kUnscaled, kStepped };
  struct OptimizerState {
    Stage stage = Stage::kReady;
    bool found_inf = false;
  };

  GradScalerOptions options_;
  bool enabled_;
  double scale_;
  std::int64_t growth_tracker_ = 0;
  std::unordered_map<const optim::Optimizer*, OptimizerState> per_optimizer_;
};

}  // namespace frugal::amp
