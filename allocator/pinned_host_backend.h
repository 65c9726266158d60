// Page-locked ("pinned") host memory for the pinned caching allocator: the staging buffers
// of asynchronous host-to-device copies. With a CUDA device it comes from cudaHostAlloc and
// its events are CUDA events on the copy streams, so a buffer is reused only after the
// copies that read it have finished. Without one (a CPU-only build, or no GPU) it is mmap'd
// memory locked with mlock; where RLIMIT_MEMLOCK forbids that, it warns once and falls back
// to ordinary pageable memory, which works, just without the locking.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "allocator/backend.h"
#include "allocator/manual_events.h"

namespace frugal::alloc {

class CudaEventPool;

class PinnedHostBackend : public Backend {
 public:
  enum class Mode { kCudaHostAlloc, kMlock };

  // kCudaHostAlloc when a CUDA device is available, else kMlock.
  PinnedHostBackend();
  explicit PinnedHostBackend(Mode mode);
  ~PinnedHostBackend() override;

  Mode mode() const { return mode_; }
  std::string name() const override { return "pinned"; }
  bool host_addressable() const override { return true; }
  std::size_t total_memory() const override { return total_memory_; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) override;

  EventHandle record_event(StreamId stream) override;
  bool event_completed(EventHandle event) override;
  bool wait_event(EventHandle event) override;
  void destroy_event(EventHandle event) override;

  // Bytes now held that are really page-locked, and that fell back to pageable memory.
  std::size_t locked_bytes() const { return locked_bytes_; }
  std::size_t pageable_bytes() const { return pageable_bytes_; }
  // Events of the mlock mode (complete when recorded; tests may make them manual).
  ManualEvents& events() { return manual_events_; }

 private:
  Mode mode_;
  std::size_t total_memory_ = 0;
  std::atomic<std::size_t> locked_bytes_{0}, pageable_bytes_{0};
  ManualEvents manual_events_;
  std::mutex pageable_mutex_;
  std::unordered_set<void*> pageable_;  // blocks whose lock was refused (rare)
  std::unique_ptr<CudaEventPool> cuda_events_;
};

}  // namespace frugal::alloc
