// This process's memory on a GPU as NVML counts it — the figure nvidia-smi's process table
// shows — through libnvidia-ml.so.1 opened at run time: nothing to link at build time, and
// on a machine without the driver (or in a PID namespace NVML cannot see into) the answer is
// "unknown" with the reason, never an error.
#pragma once

#include <cstdint>
#include <string>

namespace frugal::monitor {

struct NvmlProcessMemory {
  std::int64_t bytes = -1;  // -1: unknown (see note)
  std::string note;         // why it is unknown; "" when known
};

// The device named by its PCI bus id as cudaDeviceGetPCIBusId writes it ("0000:65:00.0"),
// so CUDA's and NVML's device orders cannot be confused.
NvmlProcessMemory nvml_process_memory(const std::string& pci_bus_id);

}  // namespace frugal::monitor
