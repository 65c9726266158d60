// Host (CPU) memory for tensors, obtained straight from the kernel with mmap. Segments of
// 2 MiB and more are 2 MiB-aligned and advised to use transparent huge pages, and every
// page is faulted in when the segment is obtained, because on a virtual machine each fresh
// 4 KiB page costs a fault when first touched; the caching allocator above keeps them
// resident, so a training loop pays for its memory once, and reserved bytes are resident
// bytes, as on a GPU.
#pragma once

#include "allocator/backend.h"
#include "allocator/manual_events.h"

namespace frugal::alloc {

// CPU work is synchronous: events complete when recorded, unless a test makes them manual.
class HostBackend : public ManualEventsBackend {
 public:
  HostBackend();

  std::string name() const override { return "cpu"; }
  std::size_t total_memory() const override { return total_memory_; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) override;

  bool supports_virtual_memory() const override { return true; }
  bool host_addressable() const override { return true; }
  void* reserve_address_range(std::size_t bytes) override;
  void release_address_range(void* base, std::size_t bytes) override;
  bool map(void* addr, std::size_t bytes) override;
  void unmap(void* addr, std::size_t bytes) override;

 private:
  std::size_t total_memory_;
};

}  // namespace frugal::alloc
