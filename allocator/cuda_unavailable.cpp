// The CUDA device queries of a build without CUDA: no devices, and a clear reason.
#include "allocator/cuda_device.h"

#include "common/error.h"

namespace frugal::cuda {

bool is_built() { return false; }
int device_count() { return 0; }
bool is_available() { return false; }
std::string unavailable_reason() {
  return "frugal was built without CUDA (configure with nvcc present, FRUGAL_CUDA=ON)";
}
void synchronize(int) { throw Error("cuda::synchronize: frugal was built without CUDA"); }

}  // namespace frugal::cuda
