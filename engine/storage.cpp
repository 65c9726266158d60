// Storage takes and returns its block through the device's caching allocator.
#include "engine/storage.h"

namespace frugal {

StorageImpl::StorageImpl(std::size_t nbytes, Device device)
    : allocator_(&allocator_for(device)), nbytes_(nbytes), device_(device) {
  allocation_ = allocator_->allocate(nbytes);
}

StorageImpl::~StorageImpl() {
  if (allocation_) allocator_->free(allocation_);
}

}  // namespace frugal
