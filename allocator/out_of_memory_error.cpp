// The text of frugal::OutOfMemoryError.
#include "allocator/out_of_memory_error.h"

#include <cstdio>
#include <sstream>

#include "common/format.h"

namespace frugal {

double MemoryReport::fragmentation() const {
  const std::size_t free_cached = reserved_unallocated();
  if (free_cached == 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free_block) / static_cast<double>(free_cached);
}

namespace {

std::string describe(const MemoryReport& r) {
  std::ostringstream out;
  char percent[32];
  std::snprintf(percent, sizeof percent, "%.1f%%", 100.0 * r.fragmentation());
  out << "out of memory on " << r.device << ": tried to allocate " << format_bytes(r.requested)
      << ". The device has a capacity of " << format_bytes(r.capacity);
  if (r.device_free) out << " of which " << format_bytes(*r.device_free) << " is free";
  if (r.limit < r.capacity) out << " with a limit of " << format_bytes(r.limit) << " set";
  out << "; " << format_bytes(r.allocated) << " is allocated by frugal and "
      << format_bytes(r.reserved_unallocated()) << " is reserved but unallocated"
      << " (the largest free block is " << format_bytes(r.largest_free_block) << ", fragmentation "
      << percent << ").";
  out << " Try: a smaller batch size or gradient accumulation; releasing tensors that are no"
         " longer needed";
  if (r.reserved_unallocated() > r.requested / 4 && !r.expandable_segments) {
    out << "; FRUGAL_ALLOC_CONF=expandable_segments:True, as much reserved memory is free but"
           " fragmented";
  } else if (r.reserved_unallocated() > r.requested / 4) {
    out << "; FRUGAL_ALLOC_CONF=max_split_size_mb:N or garbage_collection_threshold:F against"
           " fragmentation";
  }
  if (r.limit < r.capacity) out << "; raising the memory limit";
  out << ".";
  return out.str();
}

}  // namespace

OutOfMemoryError::OutOfMemoryError(const MemoryReport& report)
    : Error(describe(report)), report_(report) {}

}  // namespace frugal
