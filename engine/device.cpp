// Device names, and which caching allocator serves each device.
#include "engine/device.h"

#include "allocator/cuda_device.h"
#include "allocator/default_allocators.h"
#include "common/error.h"

#if FRUGAL_WITH_CUDA
#include "kernels/cuda/stream.h"
#endif

namespace frugal {

Device::Device(const std::string& text) : Device() {
  if (text == "cpu") return;
  if (text.rfind("cuda", 0) == 0) {
    type_ = DeviceType::CUDA;
    if (text.size() == 4) return;
    FRUGAL_CHECK(text[4] == ':' && text.size() > 5 && text.size() <= 7,
                 "invalid device string '" + text + "' (expected cpu, cuda or cuda:N)");
    int index = 0;
    for (std::size_t i = 5; i < text.size(); ++i) {
      FRUGAL_CHECK(text[i] >= '0' && text[i] <= '9',
                   "invalid device string '" + text + "' (expected cpu, cuda or cuda:N)");
      index = index * 10 + (text[i] - '0');
    }
    FRUGAL_CHECK(index < 128, "invalid device string '" + text + "': index too large");
    index_ = static_cast<std::int8_t>(index);
    return;
  }
  throw Error("invalid device string '" + text + "' (expected cpu, cuda or cuda:N)");
}

std::string Device::str() const {
  if (is_cpu()) return "cpu";
  return index_ < 0 ? "cuda" : "cuda:" + std::to_string(index_);
}

int current_cuda_device() {
#if FRUGAL_WITH_CUDA
  return kernels::cuda::current_device();
#else
  return 0;
#endif
}

std::uint64_t current_cuda_stream() {
#if FRUGAL_WITH_CUDA
  return kernels::cuda::current_stream();
#else
  return 0;
#endif
}

std::uint64_t current_cuda_stream(int index) {
#if FRUGAL_WITH_CUDA
  return kernels::cuda::current_stream(index);
#else
  (void)index;
  return 0;
#endif
}

Device resolve_device(Device device) {
  if (device.is_cuda() && device.index() < 0) return Device(kCUDA, current_cuda_device());
  return device;
}

alloc::CachingAllocator& allocator_for(Device device, const char* op) {
  if (device.is_cpu()) return alloc::cpu_allocator();
  if (!cuda::is_built()) {
    throw Error(std::string(op) + ": device " + device.str() +
                " is not available: frugal was built without CUDA");
  }
  if (!cuda::is_available()) {
    throw Error(std::string(op) + ": device " + device.str() +
                " is not available: " + cuda::unavailable_reason());
  }
  return alloc::cuda_allocator(device.index() < 0 ? current_cuda_device() : device.index());
}

}  // namespace frugal
