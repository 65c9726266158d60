// Construction of the process-wide allocators. They are never destroyed: tensors held by
// static objects may be freed during exit.
#include "allocator/default_allocators.h"

#include <array>
#include <atomic>
#include <mutex>

#include "allocator/cuda_device.h"
#include "allocator/host_backend.h"
#include "allocator/pinned_host_backend.h"
#include "common/error.h"

#if FRUGAL_WITH_CUDA
#include "allocator/cuda_backend.h"
#endif

namespace frugal::alloc {

CachingAllocator& cpu_allocator() {
  static CachingAllocator* allocator =
      new CachingAllocator(std::make_shared<HostBackend>(), AllocatorConfig::from_environment());
  return *allocator;
}

CachingAllocator& cuda_allocator(int device) {
  constexpr int kMaxDevices = 64;
  static std::array<std::atomic<CachingAllocator*>, kMaxDevices> allocators{};
  static std::mutex creating;
  FRUGAL_CHECK(cuda::is_available(), "cuda_allocator: " + cuda::unavailable_reason());
  FRUGAL_CHECK(device >= 0 && device < cuda::device_count() && device < kMaxDevices,
               "cuda_allocator: no CUDA device " + std::to_string(device) + " (this machine has " +
                   std::to_string(cuda::device_count()) + ")");
  if (CachingAllocator* a = allocators[device].load(std::memory_order_acquire)) return *a;
  std::lock_guard<std::mutex> lock(creating);
  if (CachingAllocator* a = allocators[device].load(std::memory_order_acquire)) return *a;
#if FRUGAL_WITH_CUDA
  auto* a = new CachingAllocator(std::make_shared<CudaBackend>(device),
                                 AllocatorConfig::from_environment());
  allocators[device].store(a, std::memory_order_release);
  return *a;
#else
  throw Error("cuda_allocator: frugal was built without CUDA");
#endif
}

CachingAllocator& pinned_allocator() {
  static CachingAllocator* allocator = [] {
    // Pinned buffers are whole segments of locked pages: no virtual-memory growth.
    AllocatorConfig config = AllocatorConfig::from_environment();
    config.expandable_segments = false;
    return new CachingAllocator(std::make_shared<PinnedHostBackend>(), config);
  }();
  return *allocator;
}

}  // namespace frugal::alloc
