// Storage: the bytes behind one or more tensors (a tensor and its views share one). It takes
// its block from the device's caching allocator and gives it back when the last tensor
// viewing it goes away — RAII is frugal's `del`. It also carries the version counter that
// in-place ops bump, shared by all views, so autograd can detect a modified saved tensor.
#pragma once

#include <cstddef>
#include <cstdint>

#include "allocator/caching_allocator.h"
#include "engine/device.h"

namespace frugal {

class StorageImpl {
 public:
  // Throws alloc::OutOfMemoryError when the device cannot provide `nbytes`.
  StorageImpl(std::size_t nbytes, Device device);
  // Host memory from `allocator` (the pinned allocator, for pin_memory()).
  StorageImpl(std::size_t nbytes, alloc::CachingAllocator& host_allocator, bool pinned);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return allocation_.ptr; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  std::uint32_t version() const { return version_; }
  bool is_pinned() const { return pinned_; }
  void bump_version() { ++version_; }

  // Marks the block as used by work queued on CUDA stream `stream` (not the one it was
  // allocated on), so that once freed it is reused only after that work is done. A no-op on
  // the CPU.
  void record_stream(std::uint64_t stream);

  // Memory history: names `op` as the op that allocated this block, when it was allocated
  // just now (autograd records an op's node after the forward allocated its output).
  void name_history_op(const char* op) const {
    if (allocation_) allocator_->name_allocation_op(allocation_, op);
  }

 private:
  alloc::CachingAllocator* allocator_;
  alloc::Allocation allocation_;
  std::size_t nbytes_;
  Device device_;
  std::uint32_t version_ = 0;
  bool pinned_ = false;
};

}  // namespace frugal
