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
  for (auto& [device, events] : free_)
    for (cudaEvent_t e : events) (void)cudaEventDestroy(e);
}

EventHandle CudaEventPool::record(StreamId stream) {
  int device = device_;
  if (device == kCurrentDevice) FRUGAL_CUDA_CHECK(cudaGetDevice(&device));
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<cudaEvent_t>& free = free_[device];
    if (!free.empty()) {
      event = free.back();
      free.pop_back();
    }
  }
  DeviceGuard guard(device);
  // Timing off: such events are cheaper to record and to query.
  if (event == nullptr) FRUGAL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  FRUGAL_CUDA_CHECK(cudaEventRecord(event, reinterpret_cast<cudaStream_t>(stream)));
  if (device_ == kCurrentDevice) {
    std::lock_guard<std::mutex> lock(mutex_);
    device_of_[event] = device;
  }
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

void CudaEventPool::wait(EventHandle handle) {
  FRUGAL_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(handle)));
}

void CudaEventPool::destroy(EventHandle handle) {
  const auto event = static_cast<cudaEvent_t>(handle);
  std::lock_guard<std::mutex> lock(mutex_);
  int device = device_;
  if (device == kCurrentDevice) {
    // Back to the list of the device it was made on, where it can be recorded again.
    const auto it = device_of_.find(event);
    if (it == device_of_.end()) {  // not one of ours: never reuse what we cannot place
      (void)cudaEventDestroy(event);
      return;
    }
    device = it->second;
    device_of_.erase(it);
  }
  free_[device].push_back(event);
}

}  // namespace frugal::alloc
