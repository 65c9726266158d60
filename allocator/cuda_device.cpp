// The CUDA device queries of a CUDA build. A machine with the toolkit but no driver or no
// GPU (CI) is not an error here: cudaGetDeviceCount fails, and the answer is "no devices".
#include "allocator/cuda_device.h"

#include <mutex>

#include "common/cuda_check.h"

namespace frugal::cuda {

namespace {

struct Probe {
  int count = 0;
  std::string reason;
};

const Probe& probe() {
  static const Probe result = [] {
    Probe p;
    const cudaError_t status = cudaGetDeviceCount(&p.count);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      p.count = 0;
      p.reason = std::string("no usable CUDA device: cudaGetDeviceCount says ") +
                 cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
    } else if (p.count == 0) {
      p.reason = "no CUDA device is present";
    }
    return p;
  }();
  return result;
}

}  // namespace

bool is_built() { return true; }
int device_count() { return probe().count; }
bool is_available() { return probe().count > 0; }
std::string unavailable_reason() { return probe().reason; }

void synchronize(int device) {
  FRUGAL_CHECK(is_available(), "cuda::synchronize: " + unavailable_reason());
  if (device < 0) {
    FRUGAL_CUDA_CHECK(cudaDeviceSynchronize());
    return;
  }
  int current = 0;
  FRUGAL_CUDA_CHECK(cudaGetDevice(&current));
  FRUGAL_CUDA_CHECK(cudaSetDevice(device));
  const cudaError_t status = cudaDeviceSynchronize();
  FRUGAL_CUDA_CHECK(cudaSetDevice(current));
  FRUGAL_CUDA_CHECK(status);
}

}  // namespace frugal::cuda
