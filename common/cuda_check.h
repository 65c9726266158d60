// Checking CUDA calls: FRUGAL_CUDA_CHECK(cudaMalloc(&p, n)) turns a failed runtime call into
// a frugal::CudaError naming the call, the error and the file and line; FRUGAL_CU_CHECK does
// the same for driver-API results. Included only by files built with the CUDA toolkit.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string>

#include "common/error.h"

namespace frugal {

// A CUDA runtime or driver call that failed; code() is its cudaError_t or CUresult.
class CudaError : public Error {
 public:
  CudaError(const std::string& what, int code) : Error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

namespace detail {
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_cu_error(CUresult result, const char* call, const char* file, int line);
}  // namespace detail

}  // namespace frugal

#define FRUGAL_CUDA_CHECK(call)                                                           \
  do {                                                                                    \
    const cudaError_t frugal_cuda_status_ = (call);                                       \
    if (frugal_cuda_status_ != cudaSuccess) [[unlikely]]                                  \
      ::frugal::detail::throw_cuda_error(frugal_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define FRUGAL_CU_CHECK(call)                                                         \
  do {                                                                                \
    const CUresult frugal_cu_status_ = (call);                                        \
    if (frugal_cu_status_ != CUDA_SUCCESS) [[unlikely]]                               \
      ::frugal::detail::throw_cu_error(frugal_cu_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: the launch's own error (a bad configuration), not a later one.
#define FRUGAL_CUDA_CHECK_LAUNCH() FRUGAL_CUDA_CHECK(cudaGetLastError())
