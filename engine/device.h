// Where a tensor lives: the CPU now, CUDA devices with the CUDA backend. Each device has one
// caching allocator, which every byte of its tensors' storage comes from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace frugal {

namespace alloc {
class CachingAllocator;
}

enum class DeviceType : std::uint8_t { CPU, CUDA };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

class Device {
 public:
  Device(DeviceType type = DeviceType::CPU, int index = -1)  // NOLINT: implicit like libtorch
      : type_(type), index_(static_cast<std::int8_t>(index)) {}
  // "cpu", "cuda", "cuda:1"; anything else is a frugal::Error.
  explicit Device(const std::string& text);

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  std::string str() const;
  bool operator==(const Device& o) const {
    // The CPU has one device whatever the index; cuda and cuda:0 name the same device.
    return type_ == o.type_ && (is_cpu() || std::max(0, int{index_}) == std::max(0, int{o.index_}));
  }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_;
  std::int8_t index_;
};

// The caching allocator behind tensors on `device`. A CUDA device in a build without CUDA
// tensors is a frugal::Error that says so, naming `op`.
alloc::CachingAllocator& allocator_for(Device device, const char* op = "allocation");

// The CUDA device ops run on now (kernels::cuda::current_device()), and this thread's current
// stream there or on device `index`, as the allocator's stream id; 0 in a build without CUDA.
int current_cuda_device();
std::uint64_t current_cuda_stream();
std::uint64_t current_cuda_stream(int index);

// `device` with its index made explicit: cuda is the current CUDA device, cpu stays cpu.
Device resolve_device(Device device);

}  // namespace frugal
