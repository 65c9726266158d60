// The simulated device: a capacity counter over a fake address space. Segments and
// reservations get fresh, 2 MiB-aligned addresses that are never reused and never touched.
#include "allocator/simulated_device.h"

#include <chrono>

#include "common/error.h"
#include "common/format.h"

namespace frugal::alloc {

namespace {
constexpr std::uintptr_t kAddressBase = std::uintptr_t{1} << 44;
std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }
}  // namespace

SimulatedDevice::SimulatedDevice(std::size_t capacity, std::size_t granularity)
    : capacity_(capacity), granularity_(granularity), next_address_(kAddressBase) {
  FRUGAL_CHECK(
      granularity > 0 && (granularity & (granularity - 1)) == 0,
      "SimulatedDevice: granularity must be a power of two, got " + std::to_string(granularity));
}

void SimulatedDevice::charge_call_cost() const {
  if (call_cost_ns_ == 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(call_cost_ns_);
  while (std::chrono::steady_clock::now() < until) {
  }
}

void* SimulatedDevice::allocate(std::size_t bytes) {
  charge_call_cost();
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes == 0 || bytes > capacity_ - used_) return nullptr;
  const std::uintptr_t address = next_address_;
  // Leave a gap so that neighbouring segments never look contiguous.
  next_address_ += round_up(bytes, granularity_) + granularity_;
  used_ += bytes;
  peak_used_ = std::max(peak_used_, used_);
  ++calls_;
  live_.emplace(address, bytes);
  return reinterpret_cast<void*>(address);
}

void SimulatedDevice::deallocate(void* ptr, std::size_t bytes) {
  charge_call_cost();
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = live_.find(reinterpret_cast<std::uintptr_t>(ptr));
  FRUGAL_CHECK(it != live_.end() && it->second == bytes,
               "SimulatedDevice::deallocate: " + std::to_string(bytes) +
                   " bytes at an address that is not a live segment of that size");
  live_.erase(it);
  used_ -= bytes;
}

void* SimulatedDevice::reserve_address_range(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  FRUGAL_CHECK(bytes % granularity_ == 0, "reserve_address_range: " + std::to_string(bytes) +
                                              " bytes is not a multiple of the granularity");
  const std::uintptr_t address = next_address_;
  next_address_ += bytes + granularity_;
  return reinterpret_cast<void*>(address);
}

void SimulatedDevice::release_address_range(void*, std::size_t) {}

bool SimulatedDevice::map(void* addr, std::size_t bytes) {
  charge_call_cost();
  std::lock_guard<std::mutex> lock(mutex_);
  FRUGAL_CHECK(
      reinterpret_cast<std::uintptr_t>(addr) % granularity_ == 0 && bytes % granularity_ == 0,
      "SimulatedDevice::map: range is not granularity-aligned");
  if (bytes > capacity_ - used_) return false;
  used_ += bytes;
  peak_used_ = std::max(peak_used_, used_);
  ++calls_;
  return true;
}

void SimulatedDevice::unmap(void*, std::size_t bytes) {
  charge_call_cost();
  std::lock_guard<std::mutex> lock(mutex_);
  FRUGAL_CHECK(bytes <= used_, "SimulatedDevice::unmap: more bytes than are mapped");
  used_ -= bytes;
}

std::size_t SimulatedDevice::used() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_;
}
std::size_t SimulatedDevice::peak_used() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_used_;
}
std::uint64_t SimulatedDevice::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

}  // namespace frugal::alloc
