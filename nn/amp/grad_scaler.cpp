// GradScaler: the scale and growth bookkeeping on the host, the unscaling in one fused pass per
// gradient (amp_non_finite_check_and_unscale_), one inf/NaN flag per device.
#include "nn/amp/grad_scaler.h"

#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/amp.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/factory.h"

namespace frugal::amp {

namespace {

void check_options(const GradScalerOptions& o) {
  FRUGAL_CHECK(o.init_scale > 0 && std::isfinite(o.init_scale),
               "GradScaler: init_scale must be a positive finite number, got " +
                   std::to_string(o.init_scale));
  FRUGAL_CHECK(o.growth_factor > 1.0,
               "GradScaler: growth_factor must be > 1, got " + std::to_string(o.growth_factor));
  FRUGAL_CHECK(
      o.backoff_factor > 0 && o.backoff_factor < 1.0,
      "GradScaler: backoff_factor must be in (0, 1), got " + std::to_string(o.backoff_factor));
  FRUGAL_CHECK(o.growth_interval >= 1, "GradScaler: growth_interval must be >= 1, got " +
                                           std::to_string(o.growth_interval));
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options)
    : options_(options), enabled_(options.enabled), scale_(options.init_scale) {
  check_options(options_);
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!enabled_) return loss;
  FRUGAL_CHECK(loss.defined(), "GradScaler::scale: the loss is undefined");
  return mul(loss, scale_);
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  OptimizerState& state = per_optimizer_[&optimizer];
  FRUGAL_CHECK(state.stage != Stage::kUnscaled,
               "GradScaler::unscale_: already called on this optimizer since the last update()");
  FRUGAL_CHECK(state.stage != Stage::kStepped,
               "GradScaler::unscale_: called after step(); call update() first");
  // PyTorch computes 1 / scale in double and rounds it to float32 once.
  const double inv_scale = static_cast<float>(1.0 / scale_);
  // One flag per device, read back once when all gradients are queued.
  std::map<int, Tensor> found_by_device;  // key: -1 for the CPU, else the CUDA index
  std::map<int, std::vector<Tensor>> grads_by_device;
  for (const Tensor& p : optimizer.parameters()) {
    const Tensor& g = p.grad();
    if (!g.defined()) continue;
    const int key = g.device().is_cpu() ? -1 : g.device().index();
    grads_by_device[key].push_back(g);
  }
  NoGradGuard no_grad;
  for (auto& [key, grads] : grads_by_device) {
    Tensor found = zeros({1}, grads.front().options().dtype(kFloat32));
    amp_non_finite_check_and_unscale_(grads, found, inv_scale);
    found_by_device.emplace(key, std::move(found));
  }
  bool found_inf = false;
  for (auto& [key, found] : found_by_device) found_inf |= found.item<float>() != 0.0f;
  state.found_inf = found_inf;
  state.stage = Stage::kUnscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  OptimizerState& state = per_optimizer_[&optimizer];
  FRUGAL_CHECK(state.stage != Stage::kStepped,
               "GradScaler::step: already called on this optimizer since the last update()");
  if (state.stage == Stage::kReady) unscale_(optimizer);  // the same entry: state stays valid
  state.stage = Stage::kStepped;
  if (state.found_inf) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!enabled_) return;
  // As in PyTorch: an update needs at least one optimizer's inf check to decide on.
  FRUGAL_CHECK(!per_optimizer_.empty(),
               "GradScaler::update: no inf checks were recorded since the last update(); call "
               "step() or unscale_() first");
  bool found_inf = false;
  for (const auto& [opt, state] : per_optimizer_) found_inf |= state.found_inf;
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!enabled_) return;
  FRUGAL_CHECK(new_scale > 0 && std::isfinite(new_scale),
               "GradScaler::update: new_scale must be a positive finite number, got " +
                   std::to_string(new_scale));
  scale_ = new_scale;
  per_optimizer_.clear();
}

nn::NamedTensors GradScaler::state_dict() const {
  if (!enabled_) return {};
  auto f64 = [](double v) { return full({}, v, TensorOptions().dtype(kFloat64)); };
  auto i64 = [](std::int64_t v) { return full({}, v, TensorOptions().dtype(kInt64)); };
  return {{"scale", f64(scale_)},
          {"growth_factor", f64(options_.growth_factor)},
          {"backoff_factor", f64(options_.backoff_factor)},
          {"growth_interval", i64(options_.growth_interval)},
          {"_growth_tracker", i64(growth_tracker_)}};
}

void GradScaler::load_state_dict(const nn::NamedTensors& state) {
  FRUGAL_CHECK(enabled_ || state.empty(), "GradScaler::load_state_dict: this scaler is disabled");
  if (state.empty()) return;
  auto find = [&](const char* name) -> const Tensor& {
    for (const auto& [key, value] : state)
      if (key == name) {
        FRUGAL_CHECK(
            value.defined() && value.numel() == 1,
            std::string("GradScaler::load_state_dict: '") + name + "' must hold one value");
        return value;
      }
    throw Error(std::string("GradScaler::load_state_dict: '") + name + "' is missing");
  };
  // The counts are read only from integer tensors: a float NaN converted to an integer is
  // undefined behaviour, and a checkpoint is outside input.
  auto count = [&](const char* name) {
    const Tensor& t = find(name);
    FRUGAL_CHECK(is_integral(t.dtype(), /*include_bool=*/false),
                 std::string("GradScaler::load_state_dict: '") + name +
                     "' must be an integer tensor, got " + dtype_name(t.dtype()));
    return t.to(kInt64).item<std::int64_t>();
  };
  GradScalerOptions loaded = options_;
  loaded.init_scale = find("scale").to(kFloat64).item<double>();
  loaded.growth_factor = find("growth_factor").to(kFloat64).item<double>();
  loaded.backoff_factor = find("backoff_factor").to(kFloat64).item<double>();
  loaded.growth_interval = count("growth_interval");
  const std::int64_t tracker = count("_growth_tracker");
  check_options(loaded);
  FRUGAL_CHECK(tracker >= 0 && tracker < loaded.growth_interval,
               "GradScaler::load_state_dict: _growth_tracker " + std::to_string(tracker) +
                   " is outside [0, growth_interval)");
  options_ = loaded;
  scale_ = loaded.init_scale;
  growth_tracker_ = tracker;
  per_optimizer_.clear();
}

}  // namespace frugal::amp
