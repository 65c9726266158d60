// frugal-alloc-bench's host subjects, included by alloc_bench.cpp: the caching allocator, the
// aligned malloc/free it replaces, a device whose every call costs as much as cudaMalloc, and
// the set of live blocks that proves no two ever overlap.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "allocator/caching_allocator.h"
#include "allocator/host_backend.h"
#include "allocator/simulated_device.h"

namespace frugal::tools {

using namespace frugal::alloc;

constexpr std::size_t kAlignment = 512;

struct Handle {
  void* ptr = nullptr;
  Block* block = nullptr;
  std::size_t size = 0;
};

// The allocators under test share one shape — allocate(bytes, stream), free(handle),
// host_memory() — and the timing loop is a template over it, so that the timed windows
// hold the allocator's own call and not a virtual dispatch the allocator's users never pay.
class CachingSubject {
 public:
  // history_events > 0: the allocator records its memory history in a ring of that many
  // events all along (what it costs to leave it on).
  CachingSubject(std::shared_ptr<Backend> backend, bool host, std::size_t history_events = 0)
      : allocator_(std::move(backend)), host_(host) {
    if (history_events > 0) allocator_.record_history(history_events);
  }
  Handle allocate(std::size_t bytes, StreamId stream) {
    const Allocation a = allocator_.allocate(bytes, stream);
    return {a.ptr, a.block, a.size};
  }
  void free(const Handle& h) { allocator_.free(Allocation{h.ptr, h.block, h.size}); }
  bool host_memory() const { return host_; }

 private:
  CachingAllocator allocator_;
  bool host_;
};

class AlignedMallocSubject {
 public:
  Handle allocate(std::size_t bytes, StreamId) {
    const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) throw Error("aligned_alloc failed");
    return {p, nullptr, bytes};
  }
  void free(const Handle& h) { std::free(h.ptr); }
  bool host_memory() const { return true; }
};

class DeviceCallSubject {
 public:
  explicit DeviceCallSubject(std::shared_ptr<SimulatedDevice> d) : device_(std::move(d)) {}
  Handle allocate(std::size_t bytes, StreamId) {
    void* p = device_->allocate(bytes);
    if (p == nullptr) throw Error("simulated device out of memory");
    return {p, nullptr, bytes};
  }
  void free(const Handle& h) { device_->deallocate(h.ptr, h.size); }
  bool host_memory() const { return false; }

 private:
  std::shared_ptr<SimulatedDevice> device_;
};

// Live blocks of all threads, to prove that no two ever overlap.
class LiveSet {
 public:
  bool insert(std::uintptr_t begin, std::size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto next = live_.lower_bound(begin);
    if (next != live_.end() && next->first < begin + size) return false;
    if (next != live_.begin() && std::prev(next)->first + std::prev(next)->second > begin) {
      return false;
    }
    live_.emplace(begin, size);
    return true;
  }
  void erase(std::uintptr_t begin) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(begin);
  }

 private:
  std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> live_;
};

}  // namespace frugal::tools
