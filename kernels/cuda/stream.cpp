// The current device and streams, and byte copies: kernels/cuda/stream.h over the CUDA
// runtime, every call checked.
#include "kernels/cuda/stream.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "common/cuda_check.h"
#include "common/error.h"

namespace frugal::kernels::cuda {

namespace {

thread_local StreamId current_streams[kMaxDevices] = {};

cudaStream_t as_stream(StreamId id) { return reinterpret_cast<cudaStream_t>(id); }

void check_device(int device) {
  FRUGAL_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index " + std::to_string(device) +
                                                        " is out of range [0, " +
                                                        std::to_string(kMaxDevices) + ")");
}

}  // namespace

int current_device() {
  int device = 0;
  FRUGAL_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

void set_device(int device) {
  check_device(device);
  FRUGAL_CUDA_CHECK(cudaSetDevice(device));
}

// The runtime may report a device past frugal's table (a machine with more than kMaxDevices
// GPUs, or cudaSetDevice called by other code): an error, not a write past the array.
StreamId current_stream() {
  const int device = current_device();
  check_device(device);
  return current_streams[device];
}

StreamId current_stream(int device) {
  check_device(device);
  return current_streams[device];
}

void set_current_stream(StreamId stream) {
  const int device = current_device();
  check_device(device);
  current_streams[device] = stream;
}

StreamId copy_stream(int device) {
  check_device(device);
  static std::mutex mutex;
  static StreamId streams[kMaxDevices] = {};
  std::lock_guard lock(mutex);
  if (streams[device] == 0) {
    DeviceGuard guard(device);
    cudaStream_t stream = nullptr;
    // Non-blocking: the copy stream must not serialise with the legacy default stream.
    FRUGAL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    streams[device] = reinterpret_cast<StreamId>(stream);
  }
  return streams[device];
}

DeviceGuard::DeviceGuard(int device) : previous_(current_device()) {
  if (device >= 0 && device != previous_) set_device(device);
}

DeviceGuard::~DeviceGuard() {
  // A destructor must not throw, and it also runs while an exception unwinds, typically after
  // a kernel fault, when runtime calls may return that sticky error (cudaGetDevice's manual
  // says it may): a checked current_device() here would then throw during unwinding and
  // std::terminate the process. So the calls are unchecked; the next checked call reports it.
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess || device != previous_) (void)cudaSetDevice(previous_);
}

StreamGuard::StreamGuard(StreamId stream) : device_(current_device()), previous_(current_stream()) {
  set_current_stream(stream);
}

// No CUDA call here (see ~DeviceGuard): the stream is restored on the device the guard was
// made on, even if the current device changed in between.
StreamGuard::~StreamGuard() { current_streams[device_] = previous_; }

void synchronize_stream(StreamId stream) {
  FRUGAL_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
}

void stream_wait_stream(StreamId waiter, StreamId stream) {
  if (waiter == stream) return;
  cudaEvent_t event = nullptr;
  FRUGAL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  FRUGAL_CUDA_CHECK(cudaEventRecord(event, as_stream(stream)));
  FRUGAL_CUDA_CHECK(cudaStreamWaitEvent(as_stream(waiter), event, 0));
  // Destroying a recorded event is safe: CUDA releases it once the wait is resolved.
  FRUGAL_CUDA_CHECK(cudaEventDestroy(event));
}

void copy_bytes(void* dst, const void* src, std::size_t bytes, CopyKind kind, StreamId stream,
                bool non_blocking) {
  if (bytes == 0) return;
  const cudaMemcpyKind direction = kind == CopyKind::HostToDevice   ? cudaMemcpyHostToDevice
                                   : kind == CopyKind::DeviceToHost ? cudaMemcpyDeviceToHost
                                                                    : cudaMemcpyDeviceToDevice;
  FRUGAL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, direction, as_stream(stream)));
  if (!non_blocking) FRUGAL_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
}

void memset_bytes(void* dst, int value, std::size_t bytes) {
  if (bytes == 0) return;
  FRUGAL_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, as_stream(current_stream())));
}

}  // namespace frugal::kernels::cuda
