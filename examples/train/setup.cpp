// The parts frugal-train puts together before its loop (setup.h): optimizer, schedule, the
// finder's batch, batches on the device and the test-set evaluation.
#include "examples/train/setup.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "common/format.h"

namespace frugal::train {

Tensor to_device(const Tensor& t, Device device) {
  if (device.is_cpu()) return t;
  return t.pin_memory().to(device, /*non_blocking=*/true);
}

double evaluate(nn::Module& model, DataSource& source, std::int64_t batch_size, Device device,
                const AmpMode& amp) {
  model.eval();
  InferenceMode no_graph;
  AutocastGuard autocast(device.type(), amp.dtype, amp.enabled());  // as in training
  std::int64_t correct = 0, seen = 0;
  source.for_each_test_batch(batch_size, [&](const data::Batch& batch) {
    const Tensor logits = model.forward(to_device(batch.data, device));
    correct += eq(argmax(logits, 1), to_device(batch.target, device)).sum().item<std::int64_t>();
    seen += batch.target.size(0);
  });
  model.train();
  return seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name,
                                                 const std::vector<Tensor>& parameters, double lr,
                                                 double momentum, double weight_decay) {
  if (name == "sgd")
    return std::make_unique<optim::SGD>(
        parameters, optim::SGDOptions(lr).momentum(momentum).weight_decay(weight_decay));
  if (name == "adamw")
    return std::make_unique<optim::AdamW>(parameters,
                                          optim::AdamWOptions(lr).weight_decay(weight_decay));
  throw ConfigError("--optimizer must be sgd or adamw, got '" + name + "'");
}

std::unique_ptr<optim::LRScheduler> make_schedule(const std::string& name,
                                                  optim::Optimizer& optimizer,
                                                  std::int64_t total_steps) {
  if (name == "constant") return nullptr;
  if (name == "cosine") return std::make_unique<optim::CosineAnnealingLR>(optimizer, total_steps);
  throw ConfigError("--lr-schedule must be constant or cosine, got '" + name + "'");
}

std::int64_t auto_batch_size(nn::Module& model, const nn::OptimizerFactory& make_optimizer,
                             const AmpMode& amp, const nn::ModelInput& input, Device device,
                             std::int64_t accum, std::int64_t budget) {
  const nn::BatchSizeResult found = nn::find_batch_size(
      model, make_optimizer,
      [&](std::int64_t batch, optim::Optimizer& probe) {
        amp::GradScaler probe_scaler(amp::GradScalerOptions{.enabled = amp.needs_scaler()});
        const Tensor images = randn({batch, input.channels, input.height, input.width},
                                    TensorOptions().device(device));
        const Tensor labels =
            randint(0, input.classes, {batch}, TensorOptions(kInt64).device(device));
        train_step(model, probe, probe_scaler, amp, images, labels, std::min(accum, batch));
      },
      budget);
  std::string probes;
  for (const auto& step : found.steps)
    if (step.role == "probe")
      probes += (probes.empty() ? "" : " and ") + std::to_string(step.batch);
  std::printf(
      "batch-size finder: peak = %s + %s x batch (probes at %s); batch %lld, predicted %s, "
      "measured %s, budget %s\n",
      format_bytes(static_cast<std::int64_t>(found.fixed_bytes)).c_str(),
      format_bytes(static_cast<std::int64_t>(found.bytes_per_sample)).c_str(), probes.c_str(),
      static_cast<long long>(found.batch), format_bytes(found.predicted_peak).c_str(),
      format_bytes(found.measured_peak).c_str(), format_bytes(found.budget).c_str());
  FRUGAL_CHECK(accum <= found.batch, "--accum " + std::to_string(accum) +
                                         " is more than the batch the finder chose (" +
                                         std::to_string(found.batch) + ")");
  return found.batch;
}

}  // namespace frugal::train
