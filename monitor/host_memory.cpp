// Host memory from /proc/self/status, /proc/self/smaps_rollup and /proc/meminfo, with the
// meanings psutil gives them (see host_memory.h).
#include "monitor/host_memory.h"

#include <algorithm>

#include "monitor/proc_files.h"

namespace frugal::monitor {

namespace {

std::int64_t field_or(std::string_view text, std::string_view key, std::int64_t fallback = -1) {
  return find_kb_field(text, key).value_or(fallback);
}

}  // namespace

ProcessMemory parse_proc_status(std::string_view status) {
  ProcessMemory m;
  m.rss = field_or(status, "VmRSS");
  m.peak_rss = field_or(status, "VmHWM");
  m.vms = field_or(status, "VmSize");
  m.swap = field_or(status, "VmSwap");
  return m;
}

void parse_smaps(std::string_view smaps, ProcessMemory& into) {
  // smaps_rollup has each key once; smaps has them once per mapping: add them all up.
  std::int64_t private_bytes = 0, pss = 0;
  bool found = false;
  std::size_t at = 0;
  while (at < smaps.size()) {
    const std::size_t end = std::min(smaps.find('\n', at), smaps.size());
    const std::string_view line = smaps.substr(at, end - at);
    at = end + 1;
    for (std::string_view key : {"Private_Clean", "Private_Dirty", "Private_Hugetlb"}) {
      if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ':') {
        private_bytes += find_kb_field(line, key).value_or(0);
        found = true;
      }
    }
    if (line.starts_with("Pss:")) pss += find_kb_field(line, "Pss").value_or(0);
  }
  if (!found) return;
  into.uss = private_bytes;
  into.pss = pss;
}

SystemMemory parse_meminfo(std::string_view meminfo) {
  SystemMemory m;
  m.total = field_or(meminfo, "MemTotal");
  m.free = field_or(meminfo, "MemFree");
  m.available = field_or(meminfo, "MemAvailable", m.free);  // kernels before 3.14 lack it
  m.swap_total = field_or(meminfo, "SwapTotal");
  m.swap_free = field_or(meminfo, "SwapFree");
  return m;
}

ProcessMemory process_memory_info() {
  const auto status = read_text_file("/proc/self/status");
  return status ? parse_proc_status(*status) : ProcessMemory{};
}

ProcessMemory process_memory_full_info() {
  ProcessMemory m = process_memory_info();
  auto smaps = read_text_file("/proc/self/smaps_rollup");
  if (!smaps) smaps = read_text_file("/proc/self/smaps");
  if (smaps) parse_smaps(*smaps, m);
  return m;
}

SystemMemory system_memory() {
  const auto meminfo = read_text_file("/proc/meminfo");
  return meminfo ? parse_meminfo(*meminfo) : SystemMemory{};
}

HostMemorySampler::HostMemorySampler(bool full)
    : full_(full), start_(std::chrono::steady_clock::now()) {}

const HostMemorySampler::Sample& HostMemorySampler::sample(std::int64_t index) {
  Sample s;
  s.index = index;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  s.process = full_ ? process_memory_full_info() : process_memory_info();
  s.system = system_memory();
  samples_.push_back(s);
  return samples_.back();
}

std::int64_t HostMemorySampler::max_rss() const {
  std::int64_t best = -1;
  for (const Sample& s : samples_) best = std::max(best, s.process.rss);
  return best;
}

}  // namespace frugal::monitor
