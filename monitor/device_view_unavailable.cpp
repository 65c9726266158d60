// The device view of a build without CUDA: no devices, and the reason.
#include "allocator/cuda_device.h"
#include "monitor/device_view.h"

namespace frugal::monitor {

DeviceView device_view(int, bool) {
  DeviceView view;
  view.cuda_built = false;
  view.unavailable_reason = cuda::unavailable_reason();
  return view;
}

}  // namespace frugal::monitor
