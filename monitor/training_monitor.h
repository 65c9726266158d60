// What a training loop reports while it runs: per step, TensorBoard scalars (allocated,
// reserved, host RSS, loss, accuracy, images/s, loader queue depth, device memory); per
// epoch, a host memory sample and the leak watch. frugal-train --tensorboard DIR uses it.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "monitor/host_memory.h"
#include "monitor/leak_watch.h"
#include "monitor/summary_writer.h"

namespace frugal::alloc {
class CachingAllocator;
}

namespace frugal::monitor {

// One training step's figures; NaN (or nullopt) leaves a curve out.
struct StepScalars {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  double loss = kNone;
  double accuracy = kNone;  // of this step's batch, 0..1
  double images_per_sec = kNone;
  // Batches decoded and waiting in the data loader's queue. The threaded loader reports it;
  // the in-memory loader has no queue and leaves it out.
  std::optional<std::int64_t> loader_queue_depth = std::nullopt;
};

struct TrainingMonitorOptions {
  std::string tensorboard_dir;  // "" = no event file
  int cuda_device = -1;         // >= 0: also log that device's used and free memory per step
  LeakWatchOptions leak;
  // Live bytes per op/module for the leak watch to name what grows; by default the
  // allocator's memory history (history_tags.h), while the allocator records one.
  TagBytesProvider tag_provider;
  bool print_leak_warnings = true;  // on stderr, as they happen
};

class TrainingMonitor {
 public:
  // Takes the leak watch's baseline now, before epoch `first_epoch` + 1 runs.
  TrainingMonitor(const alloc::CachingAllocator& allocator, TrainingMonitorOptions options,
                  std::int64_t first_epoch = 0);

  // After each optimizer step (`step` counts from 1 over the whole run).
  void on_step(std::int64_t step, const StepScalars& scalars);
  // After epoch `epoch` (1-based) and its evaluation; returns the leak watch's warnings.
  std::vector<LeakWarning> on_epoch_end(std::int64_t epoch, std::int64_t step,
                                        double test_accuracy = StepScalars::kNone);

  SummaryWriter* writer() { return writer_.get(); }  // null without a TensorBoard directory
  const LeakWatch& leak_watch() const { return leak_watch_; }
  const HostMemorySampler& epoch_samples() const { return epoch_samples_; }

 private:
  void scalar(const char* tag, double value, std::int64_t step);

  const alloc::CachingAllocator& allocator_;
  TrainingMonitorOptions options_;
  std::unique_ptr<SummaryWriter> writer_;
  LeakWatch leak_watch_;
  HostMemorySampler epoch_samples_{/*full=*/true};
};

}  // namespace frugal::monitor
