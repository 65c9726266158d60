// Trace replay and the minimum-capacity search.
#include "allocator/trace_replay.h"

#include <chrono>
#include <memory>

#include "allocator/caching_allocator.h"
#include "allocator/simulated_device.h"

namespace frugal::alloc {

ReplayResult replay_trace(const Trace& trace, std::size_t capacity, const AllocatorConfig& config) {
  auto device = std::make_shared<SimulatedDevice>(capacity);
  ReplayResult result;
  result.capacity = capacity;
  result.events = trace.events.size();
  {
    CachingAllocator allocator(device, config);
    std::vector<Allocation> live(trace.slots);
    const auto start = std::chrono::steady_clock::now();
    for (const TraceEvent& e : trace.events) {
      if (e.kind == TraceEvent::Kind::kAllocate) {
        try {
          live[e.slot] = allocator.allocate(e.bytes, e.stream);
        } catch (const OutOfMemoryError&) {
          ++result.ooms;
        }
      } else {
        allocator.free(live[e.slot]);  // an empty Allocation (refused earlier) is a no-op
        live[e.slot] = {};
      }
    }
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.stats = allocator.stats();
    for (const Allocation& a : live) allocator.free(a);
  }
  result.peak_requested = result.stats.requested_bytes.all().peak;
  result.peak_allocated = result.stats.allocated_bytes.all().peak;
  result.peak_reserved = result.stats.reserved_bytes.all().peak;
  return result;
}

MinCapacity find_min_capacity(const Trace& trace, const AllocatorConfig& config,
                              std::size_t resolution, const std::function<void(int)>& on_replay) {
  MinCapacity out;
  auto completes = [&](std::size_t capacity) {
    const bool ok = replay_trace(trace, capacity, config).completed();
    ++out.replays;
    if (on_replay) on_replay(out.replays);
    return ok;
  };
  const ReplayResult unlimited = replay_trace(trace, kUnlimitedCapacity, config);
  // Below peak requested nothing completes: low * resolution < peak requested.
  std::size_t low = (static_cast<std::size_t>(unlimited.peak_requested) - 1) / resolution;
  std::size_t high = (static_cast<std::size_t>(unlimited.peak_reserved) + resolution - 1) /
                     resolution;  // completes
  if (!completes(high * resolution)) {
    // Pathological: doubling until it fits.
    while (!completes(high * resolution)) high *= 2;
  }
  while (high - low > 1) {
    const std::size_t mid = low + (high - low) / 2;
    (completes(mid * resolution) ? high : low) = mid;
  }
  // Guard against a non-monotonic boundary: look a few steps further down.
  for (std::size_t step = high; step > 1 && high - step < 8;) {
    --step;
    if (step * resolution < static_cast<std::size_t>(unlimited.peak_requested)) break;
    if (completes(step * resolution)) high = step;
  }
  out.capacity = high * resolution;
  return out;
}

}  // namespace frugal::alloc
