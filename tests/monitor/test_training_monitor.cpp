// The training monitor writes each step's figures under their tags and the epoch's, reads
// back by the independent reader; without a directory it writes nothing but still watches.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>

#include "allocator/default_allocators.h"
#include "engine/frugal.h"
#include "event_reader.h"
#include "monitor/training_monitor.h"
#include "scratch_dir.h"

using namespace frugal;
using namespace frugal::monitor;

TEST_CASE("TrainingMonitor logs memory, loss, accuracy, speed and queue depth per step",
          "[monitor][tensorboard]") {
  frugal::test::ScratchDir dir;
  auto& allocator = alloc::cpu_allocator();
  TrainingMonitorOptions options;
  options.tensorboard_dir = dir.file("tb");
  std::string path;
  {
    TrainingMonitor monitor(allocator, options);
    path = monitor.writer()->file_path();
    std::vector<Tensor> held;
    for (std::int64_t step = 1; step <= 3; ++step) {
      held.push_back(zeros({std::int64_t{1} << 18}));  // 1 MiB more allocated each step
      StepScalars s;
      s.loss = 1.0 / static_cast<double>(step);
      s.accuracy = 0.5;
      s.images_per_sec = 1000.0 * static_cast<double>(step);
      if (step == 2) s.loader_queue_depth = 4;
      monitor.on_step(step, s);
    }
    monitor.on_epoch_end(1, 3, 0.75);
  }
  const auto events = frugal::test::read_event_file(path);
  std::map<std::string, std::map<std::int64_t, float>> curves;
  for (const auto& e : events)
    for (const auto& v : e.values) curves[v.tag][e.step] = v.simple_value;
  for (const char* tag :
       {"memory/allocated_MiB", "memory/reserved_MiB", "memory/peak_allocated_MiB",
        "memory/host_rss_MiB", "train/loss", "train/accuracy", "train/images_per_sec"}) {
    INFO(tag);
    CHECK(curves[tag].size() == 3);
  }
  CHECK(curves["train/loss"][2] == 0.5f);
  CHECK(curves["train/images_per_sec"][3] == 3000.0f);
  CHECK(curves["memory/allocated_MiB"][3] - curves["memory/allocated_MiB"][1] ==
        Approx(2.0).margin(0.01));
  CHECK(curves["memory/reserved_MiB"][3] >= curves["memory/allocated_MiB"][3]);
  CHECK(curves["memory/host_rss_MiB"][1] > 1.0f);
  CHECK(curves["loader/queue_depth"].size() == 1);
  CHECK(curves["loader/queue_depth"][2] == 4.0f);
  CHECK(curves["epoch/test_accuracy"][3] == 0.75f);
  CHECK(curves["epoch/host_uss_MiB"][3] > 1.0f);
  CHECK(curves.count("device/used_MiB") == 0);  // no CUDA device asked for
}

TEST_CASE("TrainingMonitor without a directory writes nothing and still runs the leak watch",
          "[monitor][leak]") {
  auto& allocator = alloc::cpu_allocator();
  TrainingMonitorOptions options;
  options.print_leak_warnings = false;
  TrainingMonitor monitor(allocator, options);
  CHECK(monitor.writer() == nullptr);
  monitor.on_step(1, {});
  std::vector<Tensor> leak;
  std::vector<LeakWarning> warnings;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    leak.push_back(zeros({std::int64_t{4} << 20}));  // 16 MiB an epoch, never freed
    warnings = monitor.on_epoch_end(epoch, epoch);
  }
  REQUIRE_FALSE(warnings.empty());
  CHECK(warnings[0].metric == "allocated");
}
