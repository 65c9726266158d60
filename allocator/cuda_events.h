// CUDA events for the allocator's backends (the device allocator and pinned host memory):
// recorded on a stream, queried, waited for. Events are reused from a pool, because
// cudaEventCreate costs microseconds and a freed block used on another stream needs one
// per stream. Included only by files built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>
#include <unordered_map>
#include <vector>

#include "allocator/backend.h"

namespace frugal::alloc {

class CudaEventPool {
 public:
  // An event can only be recorded on a stream of the device it was created on. The device
  // allocator's blocks are used by streams of its own device alone, so its pool names that
  // device. Pinned host memory is read by copies to any device: its pool is kCurrentDevice,
  // each event made on the device current when it is recorded, which record_stream's caller
  // makes the stream's own (engine/ops/device_copy.cpp does).
  static constexpr int kCurrentDevice = -1;

  explicit CudaEventPool(int device) : device_(device) {}
  ~CudaEventPool();
  CudaEventPool(const CudaEventPool&) = delete;
  CudaEventPool& operator=(const CudaEventPool&) = delete;

  // An event recorded on `stream` (a cudaStream_t as StreamId; 0 is the legacy default).
  EventHandle record(StreamId stream);
  bool completed(EventHandle event);
  void wait(EventHandle event);
  // Back to the pool.
  void destroy(EventHandle event);

 private:
  int device_;
  std::mutex mutex_;
  std::unordered_map<int, std::vector<cudaEvent_t>> free_;  // by device
  std::unordered_map<cudaEvent_t, int> device_of_;          // kCurrentDevice: recorded events
};

// Makes `device` current for a scope and restores the previous device after it.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

}  // namespace frugal::alloc
