// The device view on a real GPU (monitor/device_view_cuda.cpp, NVML through dlopen): the
// name, compute capability and memory of cuda:0 as the CUDA runtime reports them, the same
// again on a second call (the identity is read once and kept), frugal's allocator beside
// them, and this process's NVML share or the reason it has none.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <string>

#include "allocator/default_allocators.h"
#include "common/cuda_check.h"
#include "monitor/device_view.h"
#include "tests/cuda/tensor_compare.h"

using namespace frugal;
using frugal::test::kGpu;

TEST_CASE("cuda device view: cuda:0 as the runtime reports it, the same on a second call",
          "[cuda][monitor]") {
  const Tensor held = zeros({1 << 20}, TensorOptions().device(kGpu));  // 4 MiB in frugal's cache
  cudaDeviceProp props{};
  FRUGAL_CUDA_CHECK(cudaGetDeviceProperties(&props, 0));
  for (int call = 0; call < 2; ++call) {
    INFO("call " << call);
    const monitor::DeviceView view = monitor::device_view(0, /*with_allocator=*/true);
    CHECK(view.cuda_built);
    REQUIRE(view.available());
    REQUIRE(view.devices.size() == 1);
    const monitor::DeviceMemory& d = view.devices[0];
    CHECK(d.index == 0);
    CHECK(d.name == std::string(props.name));
    CHECK(d.compute_capability == props.major * 10 + props.minor);
    CHECK(d.total > 0);
    CHECK(d.free >= 0);
    CHECK(d.free < d.total);  // this process's context is on the device at least
    CHECK(d.used == d.total - d.free);
    CHECK(d.frugal_allocated >= static_cast<std::int64_t>(held.nbytes()));
    CHECK(d.frugal_reserved >= d.frugal_allocated);
    CHECK(d.used >= d.frugal_reserved);
    // NVML counts this process (context and frugal's segments) or says why it cannot.
    INFO("NVML: " << d.process_used << " bytes; " << d.process_used_note);
    CHECK((d.process_used >= d.frugal_reserved || !d.process_used_note.empty()));
  }
}
