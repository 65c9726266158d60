// The interface between the caching allocator and a device: where segments of memory come
// from, and how work on streams is tracked. It is shaped after cudaMalloc/cudaFree,
// cuMemAddressReserve/cuMemMap and cudaEventRecord/cudaEventQuery, so the CUDA backend,
// the host backend and the simulated device all fit it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace frugal::alloc {

// A stream of device work. 0 is the default stream; a CUDA backend uses the cudaStream_t
// value. Blocks belong to the stream they were allocated on.
using StreamId = std::uint64_t;

// A backend event: a marker recorded on a stream, complete once the stream's work before it
// has finished. Opaque to the allocator.
using EventHandle = void*;

class Backend {
 public:
  virtual ~Backend() = default;

  // A short name for reports: "cpu", "simulated", "cuda:0".
  virtual std::string name() const = 0;
  // The device's memory in bytes: the base of set_memory_fraction and of OOM messages.
  virtual std::size_t total_memory() const = 0;
  // What the device itself says is free now, by all its users (cudaMemGetInfo), where it
  // can say; shown in memory_summary and out-of-memory messages.
  virtual std::optional<std::size_t> device_free_memory() const { return std::nullopt; }
  // Whether the CPU can read and write the segments' bytes (host and pinned memory): the
  // allocator then poisons their free bytes under AddressSanitizer (allocator/asan_poison.h).
  virtual bool host_addressable() const { return false; }

  // --- Physical segments (cudaMalloc / cudaFree). ---
  // Returns nullptr when the device has no memory left; that is not an exception, the
  // allocator frees cache and retries first.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;

  // --- Virtual memory for expandable segments (cuMemAddressReserve / cuMemMap). ---
  virtual bool supports_virtual_memory() const { return false; }
  // Physical memory is mapped in multiples of this.
  virtual std::size_t mapping_granularity() const { return std::size_t{2} << 20; }
  // Address space only; throws frugal::Error if even that is refused.
  virtual void* reserve_address_range(std::size_t bytes);
  virtual void release_address_range(void* base, std::size_t bytes);
  // Backs [addr, addr+bytes) with memory; false when the device has none left.
  virtual bool map(void* addr, std::size_t bytes);
  virtual void unmap(void* addr, std::size_t bytes);

  // --- Streams and events (cudaEventRecord / cudaEventQuery). ---
  virtual EventHandle record_event(StreamId stream) = 0;
  virtual bool event_completed(EventHandle event) = 0;
  // Blocks until the event completes; returns false if this backend cannot wait (a manual
  // event table in a test, which only the test can complete).
  virtual bool wait_event(EventHandle event) = 0;
  virtual void destroy_event(EventHandle event) = 0;
};

}  // namespace frugal::alloc
