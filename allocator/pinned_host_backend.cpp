// Pinned host memory: cudaHostAlloc with a CUDA device, mlock'd pages without one, and
// pageable memory with a single warning where the lock is refused.
#include "allocator/pinned_host_backend.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "allocator/cuda_device.h"
#include "common/error.h"

#if FRUGAL_WITH_CUDA
#include "allocator/cuda_events.h"
#include "common/cuda_check.h"
#else
namespace frugal::alloc {
class CudaEventPool {};  // never created in a build without CUDA
}  // namespace frugal::alloc
#endif

namespace frugal::alloc {

namespace {

std::size_t page_rounded(std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
  return (bytes + page - 1) / page * page;
}

void warn_lock_refused(std::size_t bytes, int error) {
  static std::once_flag once;
  std::call_once(once, [&] {
    rlimit limit{};
    getrlimit(RLIMIT_MEMLOCK, &limit);
    const std::string cap =
        limit.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(limit.rlim_cur) + " bytes";
    std::fprintf(
        stderr,
        "frugal: warning: pinned memory: locking %zu bytes was refused (%s; RLIMIT_MEMLOCK is %s); "
        "pinned buffers fall back to pageable memory. Raise the limit (ulimit -l) to lock them.\n",
        bytes, std::strerror(error), cap.c_str());
  });
}

}  // namespace

PinnedHostBackend::PinnedHostBackend()
    : PinnedHostBackend(cuda::is_available() ? Mode::kCudaHostAlloc : Mode::kMlock) {}

PinnedHostBackend::PinnedHostBackend(Mode mode) : mode_(mode) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  total_memory_ = pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) * page_size : 0;
  if (mode_ == Mode::kCudaHostAlloc) {
#if FRUGAL_WITH_CUDA
    FRUGAL_CHECK(cuda::is_available(),
                 "pinned memory with cudaHostAlloc: " + cuda::unavailable_reason());
    // Copies from pinned memory run on the streams of whichever device they target, and an
    // event must be made on its stream's device: each is made on the device current when it
    // is recorded (a pool fixed to the device current now would fail cudaEventRecord for a
    // copy to any other device).
    cuda_events_ = std::make_unique<CudaEventPool>(CudaEventPool::kCurrentDevice);
#else
    throw Error("pinned memory with cudaHostAlloc: frugal was built without CUDA");
#endif
  }
}

PinnedHostBackend::~PinnedHostBackend() = default;

void* PinnedHostBackend::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
#if FRUGAL_WITH_CUDA
  if (mode_ == Mode::kCudaHostAlloc) {
    void* ptr = nullptr;
    const cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    FRUGAL_CUDA_CHECK(status);
    locked_bytes_ += bytes;
    return ptr;
  }
#endif
  const std::size_t mapped = page_rounded(bytes);
  void* ptr = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ptr == MAP_FAILED) return nullptr;
  // mlock also faults every page in, so the buffer is resident before the first copy.
  if (mlock(ptr, mapped) == 0) {
    locked_bytes_ += bytes;
  } else {
    warn_lock_refused(mapped, errno);
    std::lock_guard<std::mutex> lock(pageable_mutex_);
    pageable_.insert(ptr);
    pageable_bytes_ += bytes;
  }
  return ptr;
}

void PinnedHostBackend::deallocate(void* ptr, std::size_t bytes) {
#if FRUGAL_WITH_CUDA
  if (mode_ == Mode::kCudaHostAlloc) {
    const cudaError_t status = cudaFreeHost(ptr);
    if (status == cudaErrorCudartUnloading) return;
    FRUGAL_CUDA_CHECK(status);
    locked_bytes_ -= bytes;
    return;
  }
#endif
  bool pageable = false;
  if (pageable_bytes_ != 0) {
    std::lock_guard<std::mutex> lock(pageable_mutex_);
    pageable = pageable_.erase(ptr) != 0;
  }
  (pageable ? pageable_bytes_ : locked_bytes_) -= bytes;
  munmap(ptr, page_rounded(bytes));  // unmapping unlocks
}

EventHandle PinnedHostBackend::record_event(StreamId stream) {
#if FRUGAL_WITH_CUDA
  if (cuda_events_) return cuda_events_->record(stream);
#endif
  return manual_events_.record(stream);
}

bool PinnedHostBackend::event_completed(EventHandle event) {
#if FRUGAL_WITH_CUDA
  if (cuda_events_) return cuda_events_->completed(event);
#endif
  return manual_events_.completed(event);
}

bool PinnedHostBackend::wait_event(EventHandle event) {
#if FRUGAL_WITH_CUDA
  if (cuda_events_) {
    cuda_events_->wait(event);
    return true;
  }
#endif
  return manual_events_.completed(event);
}

void PinnedHostBackend::destroy_event(EventHandle event) {
#if FRUGAL_WITH_CUDA
  if (cuda_events_) {
    cuda_events_->destroy(event);
    return;
  }
#endif
  manual_events_.destroy(event);
}

}  // namespace frugal::alloc
