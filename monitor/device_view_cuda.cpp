// The device view of a CUDA build: device-wide figures from the runtime API
// (cudaGetDeviceProperties, cudaMemGetInfo: total - free is the "used" nvidia-smi prints),
// and this process's share from NVML opened at run time (nvml_process_memory.h), matched to
// the CUDA device by PCI bus id.
#include <map>
#include <mutex>
#include <string>

#include "allocator/caching_allocator.h"
#include "allocator/cuda_device.h"
#include "allocator/default_allocators.h"
#include "common/cuda_check.h"
#include "monitor/device_view.h"
#include "monitor/nvml_process_memory.h"

namespace frugal::monitor {

namespace {

// What never changes about a device, read once: cudaGetDeviceProperties fills every field,
// some through slow driver queries (1 to 10s of milliseconds), and the training monitor's
// --tensorboard asks for the device view every step.
struct DeviceIdentity {
  std::string name;
  int compute_capability = 0;
  std::string pci_bus_id;
};

const DeviceIdentity& identity(int index) {
  static std::mutex mutex;
  static std::map<int, DeviceIdentity> known;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = known.find(index); it != known.end()) return it->second;
  DeviceIdentity id;
  cudaDeviceProp props{};
  FRUGAL_CUDA_CHECK(cudaGetDeviceProperties(&props, index));
  id.name = props.name;
  id.compute_capability = props.major * 10 + props.minor;
  char pci_bus_id[32] = {};
  FRUGAL_CUDA_CHECK(cudaDeviceGetPCIBusId(pci_bus_id, sizeof pci_bus_id, index));
  id.pci_bus_id = pci_bus_id;
  return known.emplace(index, std::move(id)).first->second;
}

DeviceMemory query_device(int index, bool with_allocator) {
  DeviceMemory d;
  d.index = index;
  const DeviceIdentity& id = identity(index);
  d.name = id.name;
  d.compute_capability = id.compute_capability;
  int current = 0;
  FRUGAL_CUDA_CHECK(cudaGetDevice(&current));
  FRUGAL_CUDA_CHECK(cudaSetDevice(index));
  std::size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  FRUGAL_CUDA_CHECK(cudaSetDevice(current));
  FRUGAL_CUDA_CHECK(status);
  d.total = static_cast<std::int64_t>(total_bytes);
  d.free = static_cast<std::int64_t>(free_bytes);
  d.used = d.total - d.free;
  const NvmlProcessMemory mine = nvml_process_memory(id.pci_bus_id);
  d.process_used = mine.bytes;
  d.process_used_note = mine.note;
  if (with_allocator) {
    const alloc::CachingAllocator& allocator = alloc::cuda_allocator(index);
    d.frugal_reserved = static_cast<std::int64_t>(allocator.memory_reserved());
    d.frugal_allocated = static_cast<std::int64_t>(allocator.memory_allocated());
  }
  return d;
}

}  // namespace

DeviceView device_view(int device, bool with_allocator) {
  DeviceView view;
  view.cuda_built = true;
  if (!cuda::is_available()) {
    view.unavailable_reason = cuda::unavailable_reason();
    return view;
  }
  const int count = cuda::device_count();
  FRUGAL_CHECK(device < count, "device_view: no CUDA device " + std::to_string(device) +
                                   " (this machine has " + std::to_string(count) + ")");
  for (int i = device < 0 ? 0 : device; i < (device < 0 ? count : device + 1); ++i)
    view.devices.push_back(query_device(i, with_allocator));
  return view;
}

}  // namespace frugal::monitor
