// Host memory through mmap: aligned segments with transparent huge pages, and reserved
// address ranges whose pages are committed and dropped on demand (expandable segments).
#include "allocator/host_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace frugal::alloc {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// Maps `bytes` of fresh memory aligned to `alignment` by over-mapping and trimming.
void* map_aligned(std::size_t bytes, std::size_t alignment, int protection, int extra_flags) {
  const std::size_t span = bytes + alignment;
  void* raw = mmap(nullptr, span, protection, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = round_up(start, alignment);
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t end = aligned + bytes;
  if (start + span > end) munmap(reinterpret_cast<void*>(end), start + span - end);
  return reinterpret_cast<void*>(aligned);
}

// Faults the pages in now, in the allocator's slow path, rather than one by one when a
// kernel first writes them (about 12 us per 4 KiB page on a virtual machine). Reserved
// memory is then resident memory, as on a GPU, and a refusal shows up here as a failed
// allocation instead of a later crash. Older kernels without MADV_POPULATE_WRITE simply
// fault on first touch.
bool populate(void* ptr, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(ptr, bytes, MADV_POPULATE_WRITE) != 0 && errno != EINVAL) return false;
#endif
  return true;
}

}  // namespace

HostBackend::HostBackend() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  total_memory_ = pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) * page_size : 0;
}

void* HostBackend::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const bool huge = bytes >= kHugePage;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
  const std::size_t mapped = round_up(bytes, huge ? kHugePage : page);
  void* ptr = map_aligned(mapped, huge ? kHugePage : page, PROT_READ | PROT_WRITE, 0);
  if (ptr == nullptr) return nullptr;
  if (huge) madvise(ptr, mapped, MADV_HUGEPAGE);
  if (!populate(ptr, mapped)) {
    munmap(ptr, mapped);
    return nullptr;
  }
  return ptr;
}

void HostBackend::deallocate(void* ptr, std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
  munmap(ptr, round_up(bytes, bytes >= kHugePage ? kHugePage : page));
}

void* HostBackend::reserve_address_range(std::size_t bytes) {
  void* base = map_aligned(bytes, mapping_granularity(), PROT_NONE, MAP_NORESERVE);
  if (base == nullptr) {
    throw Error("cpu: could not reserve " + std::to_string(bytes) +
                " bytes of address space: " + std::strerror(errno));
  }
  return base;
}

void HostBackend::release_address_range(void* base, std::size_t bytes) { munmap(base, bytes); }

bool HostBackend::map(void* addr, std::size_t bytes) {
  if (mprotect(addr, bytes, PROT_READ | PROT_WRITE) != 0) return false;
  madvise(addr, bytes, MADV_HUGEPAGE);
  if (!populate(addr, bytes)) {
    unmap(addr, bytes);
    return false;
  }
  return true;
}

void HostBackend::unmap(void* addr, std::size_t bytes) {
  // Drop the pages (the next touch gets fresh zero pages) and fence the range off again.
  madvise(addr, bytes, MADV_DONTNEED);
  mprotect(addr, bytes, PROT_NONE);
}

}  // namespace frugal::alloc
