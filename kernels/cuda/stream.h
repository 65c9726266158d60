// Where frugal's CUDA kernels and copies run, with no CUDA header: the current device, each
// thread's current stream per device (the legacy default stream until set, as in PyTorch),
// one copy stream per device for non_blocking transfers, and byte copies between host and
// device. A stream is named by its cudaStream_t as an integer, the allocator's StreamId.
#pragma once

#include <cstddef>
#include <cstdint>

namespace frugal::kernels::cuda {

using StreamId = std::uint64_t;  // a cudaStream_t; 0 is the legacy default stream
inline constexpr int kMaxDevices = 16;

int current_device();
void set_device(int device);

// The stream this thread's kernels launch on, on the current device / on `device`.
StreamId current_stream();
StreamId current_stream(int device);
void set_current_stream(StreamId stream);

// The device's stream for non_blocking host <-> device copies (created on first use), so a
// copy overlaps the compute queued on the current stream.
StreamId copy_stream(int device);

// Makes `device` current for a scope (a no-op when it already is, or when `device` is
// negative: an unspecified index means the current device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

// Makes `stream` this thread's current stream on the current device for a scope.
class StreamGuard {
 public:
  explicit StreamGuard(StreamId stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int device_;
  StreamId previous_;
};

// Waits for everything queued on `stream`.
void synchronize_stream(StreamId stream);
// Makes `waiter` wait (on the device, without blocking the host) for the work queued on
// `stream` so far.
void stream_wait_stream(StreamId waiter, StreamId stream);

enum class CopyKind : std::uint8_t { HostToDevice, DeviceToHost, DeviceToDevice };

// Copies `bytes` on `stream`. Unless non_blocking, waits for the copy before returning (a
// copy from pageable host memory is synchronous whatever this says, as in CUDA itself).
void copy_bytes(void* dst, const void* src, std::size_t bytes, CopyKind kind, StreamId stream,
                bool non_blocking);

// Sets `bytes` bytes at `dst` to `value` on the current stream.
void memset_bytes(void* dst, int value, std::size_t bytes);

}  // namespace frugal::kernels::cuda
