// frugal-doctor's findings as a library: the machine as a training job sees it (RAM, swap,
// container limit, memlock limit, CPU, CUDA devices, the allocator configuration) and
// advice where something will hurt. The advice rules are a pure function, tested alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "monitor/cpu_info.h"
#include "monitor/device_view.h"
#include "monitor/host_memory.h"

namespace frugal::monitor {

struct MachineReport {
  std::string host, kernel;  // uname
  SystemMemory memory;
  std::int64_t cgroup_memory_limit = -1;  // the container's memory limit; -1: none
  // RLIMIT_MEMLOCK in bytes, -1 for unlimited: caps mlock'd pinned memory without CUDA.
  std::int64_t memlock_soft = -1, memlock_hard = -1;
  std::string transparent_hugepages;  // "always", "madvise", "never", or "" when unknown
  CpuInfo cpu;
  DeviceView devices;
  // FRUGAL_ALLOC_CONF: as set (or unset), and as parsed back (to_string), or the parse error.
  bool alloc_conf_set = false;
  std::string alloc_conf_env, alloc_conf_parsed, alloc_conf_error;
};

MachineReport collect_machine_report();

struct Advice {
  enum class Level { kNote, kWarning, kError };
  Level level = Level::kNote;
  std::string topic;  // "swap", "memlock", "cpu", "cuda", "allocator", ...
  std::string text;
};
const char* level_name(Advice::Level level);  // "note", "warning", "error"

// Thresholds behind the advice, named so that the rules read as sentences.
struct AdviceThresholds {
  std::int64_t little_ram = std::int64_t{16} << 30;            // no swap below this: a warning
  double low_available_fraction = 0.2;                         // of total RAM
  std::int64_t pinned_memory_wanted = std::int64_t{64} << 20;  // a loader's pinned batches
  double low_device_free_fraction = 0.5;
};

std::vector<Advice> advise(const MachineReport& report, const AdviceThresholds& thresholds = {});

std::string report_text(const MachineReport& report, const std::vector<Advice>& advice);
std::string report_json(const MachineReport& report, const std::vector<Advice>& advice);

}  // namespace frugal::monitor
