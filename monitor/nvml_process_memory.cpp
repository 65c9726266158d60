// NVML through dlopen: three entry points, declared here with their C ABI (nvml.h is not in
// the toolkit installed here, and NVML must stay optional at run time).
#include "monitor/nvml_process_memory.h"

#include <dlfcn.h>
#include <unistd.h>

#include <limits>
#include <vector>

namespace frugal::monitor {

namespace {

using NvmlReturn = int;    // nvmlReturn_t
using NvmlDevice = void*;  // nvmlDevice_t
constexpr NvmlReturn kSuccess = 0;
constexpr NvmlReturn kInsufficientSize = 7;

// nvmlProcessInfo_v1_t, the layout of the unversioned nvmlDeviceGetComputeRunningProcesses
// that every driver keeps exporting for compatibility.
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
};

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*compute_processes)(NvmlDevice, unsigned int*, ProcessInfoV1*) = nullptr;
  std::string unavailable;  // "" when usable
};

const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      n.unavailable = "NVML (libnvidia-ml.so.1, part of the NVIDIA driver) is not installed";
      return n;
    }
    n.init = reinterpret_cast<decltype(n.init)>(::dlsym(library, "nvmlInit_v2"));
    n.handle_by_pci_bus_id = reinterpret_cast<decltype(n.handle_by_pci_bus_id)>(
        ::dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.compute_processes = reinterpret_cast<decltype(n.compute_processes)>(
        ::dlsym(library, "nvmlDeviceGetComputeRunningProcesses"));
    if (!n.init || !n.handle_by_pci_bus_id || !n.compute_processes) {
      n.unavailable =
          "this NVML lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or "
          "nvmlDeviceGetComputeRunningProcesses";
    } else if (const NvmlReturn status = n.init(); status != kSuccess) {
      n.unavailable = "nvmlInit_v2 failed with NVML error " + std::to_string(status);
    }
    return n;
  }();
  return loaded;
}

}  // namespace

NvmlProcessMemory nvml_process_memory(const std::string& pci_bus_id) {
  NvmlProcessMemory result;
  const Nvml& n = nvml();
  if (!n.unavailable.empty()) {
    result.note = n.unavailable;
    return result;
  }
  NvmlDevice device = nullptr;
  if (const NvmlReturn status = n.handle_by_pci_bus_id(pci_bus_id.c_str(), &device);
      status != kSuccess) {
    result.note = "NVML does not know the device at PCI bus id " + pci_bus_id + " (error " +
                  std::to_string(status) + ")";
    return result;
  }
  std::vector<ProcessInfoV1> processes(64);
  unsigned int count = static_cast<unsigned int>(processes.size());
  NvmlReturn status = n.compute_processes(device, &count, processes.data());
  if (status == kInsufficientSize) {  // count now says how many there are
    processes.resize(count + 16);
    count = static_cast<unsigned int>(processes.size());
    status = n.compute_processes(device, &count, processes.data());
  }
  if (status != kSuccess) {
    result.note =
        "nvmlDeviceGetComputeRunningProcesses failed with NVML error " + std::to_string(status);
    return result;
  }
  const auto self = static_cast<unsigned int>(::getpid());
  for (unsigned int i = 0; i < count && i < processes.size(); ++i) {
    if (processes[i].pid != self) continue;
    if (processes[i].used_gpu_memory == std::numeric_limits<unsigned long long>::max()) {
      result.note = "NVML lists this process without its memory (not available on this system)";
      return result;
    }
    result.bytes = static_cast<std::int64_t>(processes[i].used_gpu_memory);
    return result;
  }
  result.note =
      "NVML does not list this process on the device (no CUDA context there yet, or a PID "
      "namespace "
      "it cannot see into)";
  return result;
}

}  // namespace frugal::monitor
