// A simulated device with a fixed capacity. It hands out address space only and never
// touches the memory behind it, so a 100 GB GPU workload can be replayed on a small
// machine: out-of-memory, fragmentation and empty_cache behave exactly as on a real device.
// It can also charge a fixed cost per device allocation, like cudaMalloc's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "allocator/backend.h"
#include "allocator/manual_events.h"

namespace frugal::alloc {

class SimulatedDevice : public ManualEventsBackend {
 public:
  explicit SimulatedDevice(std::size_t capacity, std::size_t granularity = std::size_t{2} << 20);

  std::string name() const override { return "simulated"; }
  std::size_t total_memory() const override { return capacity_; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) override;

  bool supports_virtual_memory() const override { return true; }
  std::size_t mapping_granularity() const override { return granularity_; }
  void* reserve_address_range(std::size_t bytes) override;
  void release_address_range(void* base, std::size_t bytes) override;
  bool map(void* addr, std::size_t bytes) override;
  void unmap(void* addr, std::size_t bytes) override;

  // Busy-waits this long in allocate/deallocate/map/unmap, to model cudaMalloc's cost.
  void set_call_cost_ns(std::uint64_t ns) { call_cost_ns_ = ns; }

  std::size_t used() const;       // bytes backed by "physical" memory now
  std::size_t peak_used() const;  // the most ever backed at once
  std::uint64_t calls() const;    // allocate + map calls that succeeded

 private:
  void charge_call_cost() const;

  const std::size_t capacity_;
  const std::size_t granularity_;
  std::uint64_t call_cost_ns_ = 0;
  mutable std::mutex mutex_;
  std::size_t used_ = 0;
  std::size_t peak_used_ = 0;
  std::uint64_t calls_ = 0;
  std::uintptr_t next_address_;
  std::map<std::uintptr_t, std::size_t> live_;  // segments and reservations, for checks
};

}  // namespace frugal::alloc
