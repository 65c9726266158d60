// The caching allocator's backend for one CUDA device: segments from cudaMalloc/cudaFree,
// expandable segments through the driver's virtual memory API (cuMemAddressReserve,
// cuMemCreate, cuMemMap, cuMemSetAccess), streams as cudaStream_t and events from a pool
// of CUDA events. No CUDA header here: it is included by code built without nvcc.
#pragma once

#include <memory>

#include "allocator/backend.h"

namespace frugal::alloc {

class CudaBackend : public Backend {
 public:
  // A frugal::Error if `device` does not exist or CUDA cannot be used.
  explicit CudaBackend(int device);
  ~CudaBackend() override;

  int device() const;
  std::string name() const override;
  std::size_t total_memory() const override;
  std::optional<std::size_t> device_free_memory() const override;

  // cudaMalloc; nullptr when the device is out of memory (the allocator then frees its
  // cache and retries), a frugal::CudaError on any other failure.
  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) override;

  bool supports_virtual_memory() const override;
  std::size_t mapping_granularity() const override;
  void* reserve_address_range(std::size_t bytes) override;
  void release_address_range(void* base, std::size_t bytes) override;
  // One physical allocation per granule, so any granule-aligned part can be unmapped.
  bool map(void* addr, std::size_t bytes) override;
  // Waits for the device first: unmapping, unlike a free, is not ordered after the work
  // already queued on the block's stream.
  void unmap(void* addr, std::size_t bytes) override;

  EventHandle record_event(StreamId stream) override;
  bool event_completed(EventHandle event) override;
  bool wait_event(EventHandle event) override;
  void destroy_event(EventHandle event) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace frugal::alloc
