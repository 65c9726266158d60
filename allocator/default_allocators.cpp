// Construction of the process-wide allocators.
#include "allocator/default_allocators.h"

#include "allocator/host_backend.h"

namespace frugal::alloc {

CachingAllocator& cpu_allocator() {
  // Never destroyed: tensors held by static objects may be freed during exit.
  static CachingAllocator* allocator =
      new CachingAllocator(std::make_shared<HostBackend>(), AllocatorConfig::from_environment());
  return *allocator;
}

}  // namespace frugal::alloc
