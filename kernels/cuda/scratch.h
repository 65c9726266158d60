// Scratch device memory for a kernel's intermediate results (per-block partial sums, flags),
// taken from frugal's CUDA caching allocator so that it shows in its stats like any tensor.
#pragma once

#include <cstddef>

#include "allocator/caching_allocator.h"
#include "allocator/default_allocators.h"
#include "kernels/cuda/stream.h"

namespace frugal::kernels::cuda {

// Memory on the current device for the current stream, freed with the object. Freeing right
// after queueing the kernels that use it is safe: the cache hands the block out again only to
// work queued later on the same stream (or, for other streams, after this stream's work).
class Scratch {
 public:
  explicit Scratch(std::size_t bytes)
      : device_(current_device()),
        allocation_(alloc::cuda_allocator(device_).allocate(bytes, current_stream())) {}
  ~Scratch() { alloc::cuda_allocator(device_).free(allocation_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  template <class P = void>
  P* get() const {
    return static_cast<P*>(allocation_.ptr);
  }

 private:
  int device_;
  alloc::Allocation allocation_;
};

}  // namespace frugal::kernels::cuda
