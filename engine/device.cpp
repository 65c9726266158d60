// Device names, and which caching allocator serves each device.
#include "engine/device.h"

#include "allocator/cuda_device.h"
#include "allocator/default_allocators.h"
#include "common/error.h"

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

alloc::CachingAllocator& allocator_for(Device device, const char* op) {
  if (device.is_cpu()) return alloc::cpu_allocator();
  if (!cuda::is_built()) {
    throw Error(std::string(op) + ": device " + device.str() + " is not available: frugal was built without CUDA");
  }
  // The CUDA allocator exists (alloc::cuda_allocator), the CUDA kernels do not yet: a tensor
  // there could not be computed with.
  throw Error(std::string(op) + ": tensors on " + device.str() +
              " are not supported yet: this build has frugal's CUDA allocator but not its CUDA kernels");
}

}  // namespace frugal
