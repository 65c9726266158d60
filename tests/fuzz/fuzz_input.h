// Shared by the libFuzzer targets: the input as a file (for readers that take a path), and the
// allocation bound every target runs under.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "allocator/default_allocators.h"

namespace frugal::fuzz {

// What one input may make frugal's CPU allocator reserve. Tensor storage comes from mmap'd
// segments that libFuzzer's -malloc_limit_mb does not see, so the bound is set here too: a
// reader that believes a header's sizes before checking them against the file fails with an
// out-of-memory error, which the target reports as a finding (scripts/fuzz.sh).
inline constexpr std::size_t kAllocatorLimitBytes = std::size_t{256} << 20;

inline void limit_allocator() {
  static const bool once = [] {
    alloc::cpu_allocator().set_memory_limit(kAllocatorLimitBytes);
    return true;
  }();
  (void)once;
}

// The bytes as an in-memory file (memfd), named by its /proc path: no disk, no cleanup.
class MemoryFile {
 public:
  MemoryFile(const std::uint8_t* data, std::size_t size) {
    fd_ = memfd_create("fuzz-input", 0);
    if (fd_ < 0) return;
    std::size_t done = 0;
    while (done < size) {
      const ssize_t w = ::write(fd_, data + done, size - done);
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace frugal::fuzz
