// Moving tensor data between devices, without autograd: the bytes behind Tensor::to(device),
// copy_ across devices and pin_memory(). Tensor::to records the autograd step on top.
#pragma once

#include "engine/tensor.h"

namespace frugal {

// A contiguous copy of t on `device` (t itself when already there). non_blocking as in
// Tensor::to: asynchronous only between pinned host memory and a CUDA device.
Tensor move_to_device(const Tensor& t, Device device, bool non_blocking = false);

}  // namespace frugal
