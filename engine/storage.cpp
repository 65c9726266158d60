// Storage takes and returns its block through the device's caching allocator.
#include "engine/storage.h"

#include <cstdio>
#include <exception>

namespace frugal {

StorageImpl::StorageImpl(std::size_t nbytes, Device device)
    : allocator_(&allocator_for(device)), nbytes_(nbytes), device_(resolve_device(device)) {
  // A CUDA block belongs to the stream its first kernels are queued on: this thread's current
  // one on the block's device (ops make that device current, see FRUGAL_KERNEL). Freed, it is
  // reusable there at once (the stream runs in order).
  allocation_ =
      allocator_->allocate(nbytes, device_.is_cuda() ? current_cuda_stream(device_.index()) : 0);
}

StorageImpl::StorageImpl(std::size_t nbytes, alloc::CachingAllocator& host_allocator, bool pinned)
    : allocator_(&host_allocator), nbytes_(nbytes), device_(kCPU), pinned_(pinned) {
  allocation_ = allocator_->allocate(nbytes);
}

void StorageImpl::record_stream(std::uint64_t stream) {
  // Pinned host blocks are read by copies on CUDA streams too: their allocator defers reuse
  // until the events recorded for those streams complete.
  if (allocation_ && (device_.is_cuda() || pinned_)) allocator_->record_stream(allocation_, stream);
}

StorageImpl::~StorageImpl() {
  if (!allocation_) return;
  try {
    allocator_->free(allocation_);
  } catch (const std::exception& e) {
    // A destructor must not throw (it may run while an exception unwinds, and the process would
    // end). Freeing fails only on a broken device: after a kernel fault, the CUDA calls that
    // order a block's reuse (events for record_stream) fail too. The block is lost; say so.
    std::fprintf(stderr, "frugal: warning: a %zu-byte block on %s could not be freed: %s\n",
                 nbytes_, device_.str().c_str(), e.what());
  }
}

}  // namespace frugal
