// Host memory as psutil reports it: the process's RSS, USS, peak RSS and swap
// (Process.memory_info / memory_full_info), the machine's RAM and swap (virtual_memory,
// swap_memory), and a sampler that records them per step or per epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

namespace frugal::monitor {

// This process. Bytes; -1 where the kernel did not say.
struct ProcessMemory {
  std::int64_t rss = -1;       // resident set (VmRSS): what `top` shows, shared pages included
  std::int64_t peak_rss = -1;  // high-water mark of rss (VmHWM, getrusage's ru_maxrss)
  std::int64_t vms = -1;       // virtual size (VmSize)
  std::int64_t swap = -1;      // swapped out (VmSwap)
  // Unique set: pages only this process maps (Private_Clean + Private_Dirty + Private_Hugetlb
  // of smaps_rollup), what would be freed if it exited — psutil's uss. Read only by the
  // full variant, as the kernel walks every mapping to produce it.
  std::int64_t uss = -1;
  std::int64_t pss = -1;  // proportional set (shared pages divided among their users)
};

// The machine, from /proc/meminfo. Bytes.
struct SystemMemory {
  std::int64_t total = -1;
  std::int64_t available = -1;  // MemAvailable: what can be allocated without swapping
  std::int64_t free = -1;
  std::int64_t swap_total = -1;
  std::int64_t swap_free = -1;
  std::int64_t swap_used() const {
    return swap_total >= 0 && swap_free >= 0 ? swap_total - swap_free : -1;
  }
};

// psutil.Process().memory_info(): cheap (one small /proc read), fit for every step.
ProcessMemory process_memory_info();
// psutil.Process().memory_full_info(): adds uss and pss from /proc/self/smaps_rollup (or
// smaps on old kernels), which costs a walk over the process's mappings.
ProcessMemory process_memory_full_info();
SystemMemory system_memory();

// The parsers, on the files' text (tested with fixed contents).
ProcessMemory parse_proc_status(std::string_view status);
void parse_smaps(std::string_view smaps, ProcessMemory& into);  // smaps_rollup or smaps
SystemMemory parse_meminfo(std::string_view meminfo);

// Records host memory at chosen moments: call sample(step) after each step, or once per
// epoch. Keeps every sample (a few dozen bytes each).
class HostMemorySampler {
 public:
  struct Sample {
    std::int64_t index;  // the step or epoch given to sample()
    double seconds;      // since the sampler was made
    ProcessMemory process;
    SystemMemory system;
  };

  // full: also read uss/pss (memory_full_info) at each sample.
  explicit HostMemorySampler(bool full = false);
  const Sample& sample(std::int64_t index);
  const std::vector<Sample>& samples() const { return samples_; }
  // Largest rss over the samples (-1 before the first).
  std::int64_t max_rss() const;

 private:
  bool full_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Sample> samples_;
};

}  // namespace frugal::monitor
