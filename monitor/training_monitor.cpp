// The training monitor: which figures go to TensorBoard under which tags, and the per-epoch
// leak watch (see training_monitor.h). Memory curves are in MiB, which TensorBoard's axis
// labels show readably (its scalars are float32, exact to 7 digits anyway).
#include "monitor/training_monitor.h"

#include <cmath>
#include <cstdio>

#include "allocator/caching_allocator.h"
#include "monitor/device_view.h"
#include "monitor/history_tags.h"

namespace frugal::monitor {

namespace {

double mib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

TrainingMonitor::TrainingMonitor(const alloc::CachingAllocator& allocator,
                                 TrainingMonitorOptions options, std::int64_t first_epoch)
    : allocator_(allocator),
      options_(std::move(options)),
      leak_watch_(options_.leak,
                  options_.tag_provider ? options_.tag_provider : history_tag_provider(allocator)) {
  if (!options_.tensorboard_dir.empty())
    writer_ = std::make_unique<SummaryWriter>(options_.tensorboard_dir);
  leak_watch_.observe(sample_memory(first_epoch, allocator_));
  epoch_samples_.sample(first_epoch);
}

void TrainingMonitor::scalar(const char* tag, double value, std::int64_t step) {
  if (writer_ && !std::isnan(value)) writer_->add_scalar(tag, value, step);
}

void TrainingMonitor::on_step(std::int64_t step, const StepScalars& s) {
  if (!writer_) return;
  const alloc::DeviceStats stats = allocator_.stats();
  scalar("memory/allocated_MiB", mib(stats.allocated_bytes.all().current), step);
  scalar("memory/reserved_MiB", mib(stats.reserved_bytes.all().current), step);
  scalar("memory/peak_allocated_MiB", mib(stats.allocated_bytes.all().peak), step);
  scalar("memory/host_rss_MiB", mib(process_memory_info().rss), step);
  scalar("train/loss", s.loss, step);
  scalar("train/accuracy", s.accuracy, step);
  scalar("train/images_per_sec", s.images_per_sec, step);
  if (s.loader_queue_depth)
    scalar("loader/queue_depth", static_cast<double>(*s.loader_queue_depth), step);
  if (options_.cuda_device >= 0) {
    const DeviceView view = device_view(options_.cuda_device, /*with_allocator=*/false);
    if (view.available()) {
      scalar("device/used_MiB", mib(view.devices[0].used), step);
      scalar("device/free_MiB", mib(view.devices[0].free), step);
    }
  }
}

std::vector<LeakWarning> TrainingMonitor::on_epoch_end(std::int64_t epoch, std::int64_t step,
                                                       double test_accuracy) {
  const auto& host = epoch_samples_.sample(epoch);
  scalar("epoch/test_accuracy", test_accuracy, step);
  scalar("epoch/host_uss_MiB", host.process.uss >= 0 ? mib(host.process.uss) : StepScalars::kNone,
         step);
  scalar("epoch/host_peak_rss_MiB",
         host.process.peak_rss >= 0 ? mib(host.process.peak_rss) : StepScalars::kNone, step);
  std::vector<LeakWarning> warnings = leak_watch_.observe(sample_memory(epoch, allocator_));
  if (options_.print_leak_warnings)
    for (const LeakWarning& w : warnings)
      std::fprintf(stderr, "frugal: warning: %s\n", w.message().c_str());
  if (writer_) writer_->flush();
  return warnings;
}

}  // namespace frugal::monitor
