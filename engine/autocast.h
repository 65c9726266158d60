// Automatic mixed precision (PyTorch's torch.autocast): inside an AutocastGuard, matmul, linear
// and convolution run in a 16-bit type while softmax, losses and reductions run in float32, so
// the activations saved for backward take half the bytes. Which op does what is one table:
// engine/autocast_policy.cpp.
#pragma once

#include <cstddef>
#include <optional>

#include "engine/device.h"
#include "engine/dtype.h"

namespace frugal {

// Turns autocast on (or, with enabled=false, off) for ops on `device` on this thread until the
// guard is destroyed; guards nest, each restoring what it found. The dtype defaults to
// bfloat16 on the CPU and float16 on CUDA, as in PyTorch. Only float16 and bfloat16 are
// accepted (anything else is a frugal::Error).
//
// Casts of float32 leaves that require grad (the weights) are cached, so a weight used by
// several ops is converted once per forward; the cache lives until the outermost guard of the
// thread (enabled or not, as in PyTorch) is destroyed. Create the guard around the forward pass
// and the loss, not around backward() or the optimizer step; backward runs every op in the
// dtype its forward used whatever the autocast state.
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType device = kCPU, std::optional<ScalarType> dtype = std::nullopt,
                         bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_;
  bool previous_enabled_;
  ScalarType previous_dtype_;
};

namespace autocast {

// Whether ops on `device` autocast on this thread now.
bool is_enabled(DeviceType device);
// The 16-bit type they autocast to (the default when no guard has set one).
ScalarType get_dtype(DeviceType device);
// How many weight casts this thread's cache holds now.
std::size_t cache_size();
// Drops the cached weight casts (the outermost guard does this itself on exit).
void clear_cache();

}  // namespace autocast

}  // namespace frugal
