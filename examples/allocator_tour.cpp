// frugal-allocator-tour: the caching allocator at work on real CPU memory — a training-like
// loop that reaches a steady state with no device calls, the PyTorch-style summary, what
// empty_cache gives back, and the out-of-memory error a capped device produces.
#include <cstdio>
#include <cstring>
#include <vector>

#include "allocator/caching_allocator.h"
#include "allocator/host_backend.h"
#include "common/cli.h"
#include "common/format.h"

using namespace frugal;
using namespace frugal::alloc;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

// One "training step": weights stay, activations are allocated layer by layer and freed in
// reverse, as backward frees them, with a few small temporaries along the way.
void training_step(CachingAllocator& allocator) {
  std::vector<Allocation> activations;
  for (std::size_t layer = 0; layer < 8; ++layer) {
    activations.push_back(allocator.allocate((layer % 2 ? 6 : 12) * MiB));
    std::memset(activations.back().ptr, 1, activations.back().size);  // touch it
    const Allocation scratch = allocator.allocate(64 * 1024);
    allocator.free(scratch);
  }
  while (!activations.empty()) {
    allocator.free(activations.back());
    activations.pop_back();
  }
}

int run(int argc, char** argv) {
  CommandLine cli("frugal-allocator-tour",
                  "A tour of frugal's caching allocator on real CPU memory.");
  if (!cli.parse(argc, argv)) return 0;

  CachingAllocator allocator(std::make_shared<HostBackend>());
  std::printf("settings: %s\n\n", allocator.config().to_string().c_str());
  const Allocation weights = allocator.allocate(40 * MiB);

  std::printf("step  device calls  reserved     allocated after step\n");
  for (int step = 1; step <= 5; ++step) {
    training_step(allocator);
    const DeviceStats s = allocator.stats();
    std::printf("%4d  %12lld  %-11s  %s\n", step, static_cast<long long>(s.num_device_alloc),
                format_bytes(s.reserved_bytes.all().current).c_str(),
                format_bytes(s.allocated_bytes.all().current).c_str());
  }
  std::printf("\nAfter the first step every block comes from the cache: no more device calls.\n\n");
  std::printf("%s\n", allocator.memory_summary().c_str());

  allocator.empty_cache();
  std::printf("empty_cache(): reserved %s, allocated %s (only the weights remain)\n\n",
              format_bytes(allocator.memory_reserved()).c_str(),
              format_bytes(allocator.memory_allocated()).c_str());

  allocator.set_memory_limit(64 * MiB);
  try {
    const Allocation too_big = allocator.allocate(100 * MiB);
    allocator.free(too_big);
  } catch (const OutOfMemoryError& e) {
    std::printf("With a 64 MiB limit, a 100 MiB request fails with:\n  %s\n", e.what());
  }
  allocator.free(weights);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
