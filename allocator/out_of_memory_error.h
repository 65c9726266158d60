// The error thrown when a device cannot give more memory even after the allocator has
// released its cache. Its message is written for the person who must fix it: what was
// asked, what the device holds and where it went, and what to try.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/error.h"

namespace frugal {

struct MemoryReport {
  std::string device;                      // "cpu", "simulated", "cuda:0"
  std::size_t requested = 0;               // bytes asked for
  std::size_t capacity = 0;                // device memory
  std::optional<std::size_t> device_free;  // free by the device's own count, where it tells
  std::size_t limit = 0;                   // set_memory_limit / fraction, or capacity
  std::size_t allocated = 0;               // bytes in live blocks
  std::size_t reserved = 0;                // bytes held from the device
  std::size_t largest_free_block = 0;      // largest cached free block
  bool expandable_segments = false;

  std::size_t reserved_unallocated() const { return reserved - allocated; }
  // Share of the cached free memory that lies outside the largest free block: 0 when the
  // free cache is one piece, near 1 when it is shattered.
  double fragmentation() const;
};

class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(const MemoryReport& report);
  const MemoryReport& report() const { return report_; }

 private:
  MemoryReport report_;
};

}  // namespace frugal
