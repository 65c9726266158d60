// CUDA devices as the rest of frugal sees them, with no CUDA header: how many there are,
// whether CUDA can be used at all, and waiting for a device's work. In a build without
// CUDA these answer "none" (cuda_unavailable.cpp), so callers need no #if.
#pragma once

#include <string>

namespace frugal::cuda {

// Whether this build has the CUDA backend.
bool is_built();
// The number of usable devices: 0 without CUDA, without a driver, or without a GPU.
int device_count();
// device_count() > 0 (libtorch's torch::cuda::is_available()).
bool is_available();
// Why is_available() is false, in words (for skipped tests and errors); "" when it is true.
std::string unavailable_reason();
// Waits for all work on the device (-1: the current one).
void synchronize(int device = -1);

}  // namespace frugal::cuda
