// The device view: what nvidia-smi would say about each CUDA device for this process —
// total, free and used memory (device-wide, from the CUDA runtime), this process's share as
// NVML counts it, beside what frugal's own caching allocator holds there — or a clear
// "no CUDA device" and why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frugal::monitor {

struct DeviceMemory {
  int index = 0;
  std::string name;            // "NVIDIA H100 80GB HBM3"
  int compute_capability = 0;  // 90 for sm_90
  std::int64_t total = 0;      // cudaMemGetInfo
  std::int64_t free = 0;
  // total - free: nvidia-smi's "Memory-Usage" (NVML's used), every process on the device
  // and this process's CUDA context included.
  std::int64_t used = 0;
  // This process's caching allocator on the device (-1 when not asked for): reserved is what
  // it holds from cudaMalloc, allocated what tensors use of that.
  std::int64_t frugal_reserved = -1;
  std::int64_t frugal_allocated = -1;
  // used - frugal_reserved: CUDA contexts, library workspaces (cuBLAS, cuDNN) and other processes.
  std::int64_t outside_frugal() const { return frugal_reserved < 0 ? -1 : used - frugal_reserved; }
  // This process's memory on the device as NVML counts it (nvidia-smi's process table: its
  // CUDA context, library workspaces and frugal's reserved memory); -1 with the reason in
  // process_used_note where NVML cannot tell (no driver library, process not listed).
  std::int64_t process_used = -1;
  std::string process_used_note;
};

struct DeviceView {
  bool cuda_built = false;         // whether this build has the CUDA backend
  std::string unavailable_reason;  // "" when there are devices
  std::vector<DeviceMemory> devices;
  bool available() const { return !devices.empty(); }
  // A few lines in nvidia-smi's spirit, or "no CUDA device: <reason>".
  std::string str() const;
  std::string json() const;
};

// Queries every device (device = -1) or one. Asking for memory info creates the CUDA context
// on a device that has none yet (about 0.5 GiB of device memory), as torch.cuda.mem_get_info
// does. with_allocator: also read frugal's caching allocator of each device, creating it
// if this process had not used the device yet (no device memory is taken for that).
DeviceView device_view(int device = -1, bool with_allocator = true);

}  // namespace frugal::monitor
