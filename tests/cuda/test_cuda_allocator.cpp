// The caching allocator on a real CUDA device: memory that kernels and copies can use,
// reuse on a stream at once and on other streams only after their events, expandable
// segments mapped and unmapped through the virtual memory API, the device's free memory
// in memory_summary, out-of-memory with its message, and pinned host memory from
// cudaHostAlloc reused only after the copy reading it has finished.
#include <cuda_runtime_api.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "allocator/caching_allocator.h"
#include "allocator/cuda_backend.h"
#include "allocator/default_allocators.h"
#include "allocator/out_of_memory_error.h"
#include "allocator/pinned_host_backend.h"
#include "common/cuda_check.h"

using namespace frugal;
using namespace frugal::alloc;
using Catch::Matchers::Contains;

namespace {

// Holds a stream at a host callback until release(): work queued behind it waits, so a
// test can observe "still in use on that stream" for as long as it needs.
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) {
    FRUGAL_CUDA_CHECK(cudaLaunchHostFunc(stream, &StreamGate::wait, this));
  }
  void release() { open_.store(true); }

 private:
  static void wait(void* self) {
    while (!static_cast<StreamGate*>(self)->open_.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::atomic<bool> open_{false};
};

// Copies `bytes` from host to the device block and back, checking they survive.
void check_round_trip(void* device_ptr, std::size_t bytes) {
  std::vector<unsigned char> out(bytes), in(bytes);
  for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(i * 31 + 7);
  FRUGAL_CUDA_CHECK(cudaMemcpy(device_ptr, out.data(), bytes, cudaMemcpyHostToDevice));
  FRUGAL_CUDA_CHECK(cudaMemcpy(in.data(), device_ptr, bytes, cudaMemcpyDeviceToHost));
  CHECK(in == out);
}

}  // namespace

TEST_CASE("cuda: cached device memory is usable and reused without cudaMalloc", "[cuda]") {
  CachingAllocator allocator(std::make_shared<CudaBackend>(0));
  const Allocation a = allocator.allocate(5 << 20);
  check_round_trip(a.ptr, 5 << 20);
  allocator.free(a);
  const Allocation b = allocator.allocate(5 << 20);
  CHECK(b.ptr == a.ptr);
  CHECK(allocator.stats().num_device_alloc == 1);
  allocator.free(b);
  allocator.empty_cache();
  CHECK(allocator.memory_reserved() == 0);
  CHECK(allocator.stats().num_device_free == 1);
}

TEST_CASE("cuda: a block used on another stream waits for that stream's work", "[cuda]") {
  CachingAllocator allocator(std::make_shared<CudaBackend>(0));
  cudaStream_t compute = nullptr, side = nullptr;
  FRUGAL_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  FRUGAL_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  const auto compute_id = reinterpret_cast<StreamId>(compute);
  const Allocation a = allocator.allocate(1 << 20, compute_id);
  StreamGate gate(side);
  FRUGAL_CUDA_CHECK(cudaMemsetAsync(a.ptr, 0, 1 << 20, side));  // queued behind the gate
  allocator.record_stream(a, reinterpret_cast<StreamId>(side));
  allocator.free(a);
  // The side stream has not run yet: the block is pending, and a new request gets other memory.
  const Allocation b = allocator.allocate(1 << 20, compute_id);
  CHECK(b.ptr != a.ptr);
  CHECK(allocator.stats().active_bytes.all().current >
        allocator.stats().allocated_bytes.all().current);
  gate.release();
  FRUGAL_CUDA_CHECK(cudaStreamSynchronize(side));
  allocator.free(b);
  // The event has completed: the next allocation on the block's own stream may reuse it.
  const Allocation c = allocator.allocate(1 << 20, compute_id);
  const Allocation d = allocator.allocate(1 << 20, compute_id);
  CHECK((c.ptr == a.ptr || d.ptr == a.ptr));
  allocator.free(c);
  allocator.free(d);
  FRUGAL_CUDA_CHECK(cudaStreamDestroy(compute));
  FRUGAL_CUDA_CHECK(cudaStreamDestroy(side));
}

TEST_CASE("cuda: expandable segments grow by mapping and give memory back by unmapping", "[cuda]") {
  auto backend = std::make_shared<CudaBackend>(0);
  if (!backend->supports_virtual_memory()) {
    WARN("this device has no virtual memory management; expandable segments are off");
    return;
  }
  AllocatorConfig config;
  config.expandable_segments = true;
  CachingAllocator allocator(backend, config);
  const std::size_t g = backend->mapping_granularity();
  std::vector<Allocation> blocks;
  for (int i = 1; i <= 4; ++i) blocks.push_back(allocator.allocate(i * (3 << 20)));
  // One segment, mapped only as far as needed (whole granules).
  CHECK(allocator.stats().segment.all().current == 1);
  CHECK(allocator.memory_reserved() % g == 0);
  CHECK(allocator.memory_reserved() < allocator.memory_allocated() + 2 * g);
  for (const Allocation& a : blocks) check_round_trip(a.ptr, a.size);
  for (const Allocation& a : blocks) allocator.free(a);
  allocator.empty_cache();
  CHECK(allocator.memory_reserved() == 0);
}

TEST_CASE("cuda: memory_summary shows the device's own free and total memory", "[cuda]") {
  CachingAllocator allocator(std::make_shared<CudaBackend>(0));
  const Allocation a = allocator.allocate(1 << 20);
  const std::string summary = allocator.memory_summary();
  CHECK_THAT(summary, Contains("cuda:0"));
  CHECK_THAT(summary, Contains("device free"));
  allocator.free(a);
}

TEST_CASE("cuda: past the memory limit, allocation fails with a full report", "[cuda]") {
  CachingAllocator allocator(std::make_shared<CudaBackend>(0));
  allocator.set_memory_limit(64 << 20);
  const Allocation a = allocator.allocate(40 << 20);
  try {
    (void)allocator.allocate(40 << 20);
    FAIL("expected OutOfMemoryError");
  } catch (const OutOfMemoryError& e) {
    CHECK_THAT(e.what(), Contains("cuda:0"));
    CHECK_THAT(e.what(), Contains("40.00 MiB"));
    CHECK_THAT(e.what(), Contains("is free"));
  }
  allocator.free(a);
  CHECK(allocator.stats().num_ooms == 1);
}

TEST_CASE("cuda: a pinned staging buffer is reused only after the copy that reads it", "[cuda]") {
  auto backend = std::make_shared<PinnedHostBackend>(PinnedHostBackend::Mode::kCudaHostAlloc);
  CachingAllocator pinned(backend);
  CachingAllocator device(std::make_shared<CudaBackend>(0));
  cudaStream_t copy = nullptr;
  FRUGAL_CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  const Allocation staging = pinned.allocate(4 << 20);
  const Allocation target = device.allocate(4 << 20);
  CHECK(backend->locked_bytes() >= (std::size_t{4} << 20));
  StreamGate gate(copy);
  FRUGAL_CUDA_CHECK(
      cudaMemcpyAsync(target.ptr, staging.ptr, 4 << 20, cudaMemcpyHostToDevice, copy));
  pinned.record_stream(staging, reinterpret_cast<StreamId>(copy));
  pinned.free(staging);
  const Allocation other = pinned.allocate(4 << 20);
  CHECK(other.ptr != staging.ptr);  // the copy has not read it yet
  gate.release();
  FRUGAL_CUDA_CHECK(cudaStreamSynchronize(copy));
  pinned.free(other);
  device.free(target);
  FRUGAL_CUDA_CHECK(cudaStreamDestroy(copy));
}

TEST_CASE("cuda: a failed CUDA call is a frugal::CudaError naming the call", "[cuda]") {
  void* p = nullptr;
  try {
    FRUGAL_CUDA_CHECK(cudaMalloc(&p, std::size_t{1} << 62));
    FAIL("expected CudaError");
  } catch (const CudaError& e) {
    CHECK_THAT(e.what(), Contains("cudaMalloc"));
    CHECK_THAT(e.what(), Contains("test_cuda_allocator.cpp"));
  }
}
