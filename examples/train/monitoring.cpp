// frugal-train's --tensorboard option and its training monitor (see monitoring.h).
#include "examples/train/monitoring.h"

#include <cstdio>

#include "allocator/caching_allocator.h"

namespace frugal::train {

void add_monitoring_options(CommandLine& cli) {
  cli.option(
      "tensorboard", "DIR",
      "write TensorBoard scalars to DIR every step (memory, host RSS, loss, accuracy, images/s)");
}

std::unique_ptr<monitor::TrainingMonitor> make_training_monitor(
    const CommandLine& cli, Device device, const alloc::CachingAllocator& allocator,
    std::int64_t first_epoch) {
  monitor::TrainingMonitorOptions options;
  if (cli.has("tensorboard")) options.tensorboard_dir = cli.get("tensorboard");
  options.cuda_device = device.is_cuda() ? std::max(0, device.index()) : -1;
  // The in-memory loader holds the whole data set and has no queue; when frugal-train moves
  // to the threaded DataLoader, pass its queue depth in StepScalars::loader_queue_depth.
  auto monitor = std::make_unique<monitor::TrainingMonitor>(allocator, options, first_epoch);
  if (monitor->writer())
    std::fprintf(stderr, "tensorboard: writing %s\n", monitor->writer()->file_path().c_str());
  return monitor;
}

}  // namespace frugal::train
