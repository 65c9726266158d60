// The pool of CUDA events behind stream-deferred reuse, and the device guard.
#include "allocator/cuda_events.h"

#include "common/cuda_check.h"

namespace frugal::alloc {

DeviceGuard::DeviceGuard(int device) {
  FRUGAL_CUDA_CHECK(cudaGetDevice(&previous_));
  if (device >= 0 && device != previous_) {
    FRUGAL_CUDA_CHECK(cudaSetDevice(device));
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) (void)cudaSetDevice(previous_);  // a destructor must not throw
}

CudaEventPool::~CudaEventPool() {
  for (cudaEvent_t e : free_) (void)cudaEventDestroy(e);
}

EventHandle CudaEventPool::record(StreamId stream) {
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      event = free_.back();
      free_.pop_back();
    }
  }
  DeviceGuard guard(device_);
  // Timing off: such events are cheaper to record and to query.
  if (event == nullptr) FRUGAL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  FRUGAL_CUDA_CHECK(cudaEventRecord(event, reinterpret_cast<cudaStream_t>(stream)));
  return event;
}

bool CudaEventPool::completed(EventHandle handle) {
  const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(handle));
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error: the stream has not got there yet
    return false;
  }
  FRUGAL_CUDA_CHECK(status);
  return true;
}

void CudaEventPool::wait(EventHandle handle) { FRUGAL_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(handle))); }

void CudaEventPool::destroy(EventHandle handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(static_cast<cudaEvent_t>(handle));
}

}  // namespace frugal::alloc
