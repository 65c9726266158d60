// frugal-train's monitoring: the --tensorboard option, and the TrainingMonitor it makes —
// TensorBoard scalars per step, a host memory sample and the leak watch after each epoch.
#pragma once

#include <cstdint>
#include <memory>

#include "common/cli.h"
#include "engine/device.h"
#include "monitor/training_monitor.h"

namespace frugal::alloc {
class CachingAllocator;
}

namespace frugal::train {

void add_monitoring_options(CommandLine& cli);

// Always made: without --tensorboard it writes no file but still watches for leaks.
// `first_epoch` is the number of epochs already done (a resumed run's).
std::unique_ptr<monitor::TrainingMonitor> make_training_monitor(
    const CommandLine& cli, Device device, const alloc::CachingAllocator& allocator,
    std::int64_t first_epoch);

}  // namespace frugal::train
