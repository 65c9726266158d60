// memory_summary(): the allocator's statistics in the table layout of PyTorch's
// torch.cuda.memory_summary(), so a PyTorch user reads it at a glance.
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "allocator/caching_allocator.h"
#include "common/format.h"

namespace frugal::alloc {

namespace {

constexpr int kWidth = 75;

// PyTorch's _format_size: the unit is chosen from the first column's value so a row
// lines up; values are truncated, not rounded.
std::string format_size(std::int64_t size, double reference) {
  static const char* const kPrefixes[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int prefix = 0;
  for (int i = 1; i < 6; ++i) {
    if (reference < 768 * 1024) break;
    prefix = i;
    size /= 1024;
    reference /= 1024;
  }
  char out[32];
  std::snprintf(out, sizeof out, "%6lld %s", static_cast<long long>(size), kPrefixes[prefix]);
  return out;
}

std::string format_count(std::int64_t count, double reference) {
  static const char* const kPrefixes[] = {" ", "K", "M"};
  int prefix = 0;
  for (int i = 1; i < 3; ++i) {
    if (reference < 750 * 1000) break;
    prefix = i;
    count /= 1000;
    reference /= 1000;
  }
  char out[32];
  std::snprintf(out, sizeof out, "%7lld %s ", static_cast<long long>(count), kPrefixes[prefix]);
  return out;
}

using Formatter = std::string (*)(std::int64_t, double);

std::string row(const std::string& name, const Stat& s, const Stat& reference, Formatter f) {
  char out[128];
  std::snprintf(out, sizeof out, " %-21s | %s | %s | %s | %s ", name.c_str(),
                f(s.current, static_cast<double>(reference.current)).c_str(),
                f(s.peak, static_cast<double>(reference.peak)).c_str(),
                f(s.allocated, static_cast<double>(reference.allocated)).c_str(),
                f(s.freed(), static_cast<double>(reference.freed())).c_str());
  return out;
}

std::string centered(const std::string& text) {
  const int pad = kWidth - static_cast<int>(text.size());
  if (pad <= 0) return text.substr(0, kWidth);
  return std::string(pad / 2, ' ') + text + std::string(pad - pad / 2, ' ');
}

}  // namespace

std::string CachingAllocator::memory_summary(bool abbreviated) const {
  const DeviceStats s = stats();
  std::vector<std::string> lines;
  lines.push_back(std::string(kWidth, '='));
  lines.push_back(centered("frugal memory summary, device " + backend_->name()));
  lines.push_back(std::string(kWidth, '-'));
  char line[128];
  std::snprintf(line, sizeof line, "  %9s OOMs: %-17lld | %6s device alloc retries: %-7lld ", "",
                static_cast<long long>(s.num_ooms), "",
                static_cast<long long>(s.num_alloc_retries));
  lines.push_back(line);
  if (const auto free = backend_->device_free_memory()) {
    // What the device says of itself, all its users together (cudaMemGetInfo).
    lines.push_back("  device free " + format_bytes(static_cast<std::int64_t>(*free)) + " of " +
                    format_bytes(static_cast<std::int64_t>(backend_->total_memory())) + " total");
  }
  lines.push_back(std::string(kWidth, '='));
  lines.push_back("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");

  struct Metric {
    const StatArray* stat;
    const char* name;
    Formatter format;
  };
  const Metric metrics[] = {
      {&s.allocated_bytes, "Allocated memory", format_size},
      {&s.active_bytes, "Active memory", format_size},
      {&s.requested_bytes, "Requested memory", format_size},
      {&s.reserved_bytes, "Reserved memory", format_size},
      {&s.inactive_split_bytes, "Non-releasable memory", format_size},
      {&s.allocation, "Allocations", format_count},
      {&s.active, "Active allocs", format_count},
      {&s.segment, "Reserved segments", format_count},
      {&s.inactive_split, "Non-releasable allocs", format_count},
  };
  for (const Metric& m : metrics) {
    lines.push_back(std::string(kWidth, '-'));
    const Stat& all = m.stat->all();
    lines.push_back(row(m.name, all, all, m.format));
    if (!abbreviated) {
      lines.push_back(row("      from large pool", m.stat->pool(PoolKind::kLarge), all, m.format));
      lines.push_back(row("      from small pool", m.stat->pool(PoolKind::kSmall), all, m.format));
    }
  }
  lines.push_back(std::string(kWidth, '-'));
  lines.push_back(
      row("Oversize allocations", s.oversize_allocations, s.oversize_allocations, format_count));
  lines.push_back(std::string(kWidth, '-'));
  lines.push_back(row("Oversize segments", s.oversize_segments, s.oversize_segments, format_count));
  lines.push_back(std::string(kWidth, '='));

  std::string out;
  for (const std::string& l : lines) out += "|" + l + "|\n";
  return out;
}

}  // namespace frugal::alloc
