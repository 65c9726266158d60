// The messages of failed CUDA calls: the call as written, the error's name and text, and
// where it was made.
#include "common/cuda_check.h"

namespace frugal::detail {

namespace {
std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " at " + file + ":" + std::to_string(line);
}
}  // namespace

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  // Clear the sticky "last error" of a non-fatal failure so later checks are not blamed.
  (void)cudaGetLastError();
  throw CudaError(std::string("CUDA error ") + cudaGetErrorName(error) + " (" +
                      cudaGetErrorString(error) + ") in " + where(call, file, line),
                  static_cast<int>(error));
}

void throw_cu_error(CUresult result, const char* call, const char* file, int line) {
  // The driver's own name and text are looked up by the caller's loaded entry points when
  // there are any; the number is always there.
  throw CudaError(std::string("CUDA driver error ") + std::to_string(static_cast<int>(result)) +
                      " in " + where(call, file, line),
                  static_cast<int>(result));
}

}  // namespace frugal::detail
