// The cuBLAS and cuDNN handles frugal's CUDA kernels call through: one of each per (thread,
// device), bound to the thread's current stream, plus the checks that turn their statuses into
// frugal::Error. No CUDA header here: the handle types are declared opaquely, as the libraries do.
#pragma once

struct cublasContext;  // cublasHandle_t is cublasContext*
struct cudnnContext;   // cudnnHandle_t is cudnnContext*

namespace frugal::kernels::cuda {

// This thread's cuBLAS handle for the current device, created on first use, with its stream
// set to current_stream() and a workspace (from frugal's CUDA caching allocator, so it shows
// in the memory stats) reserved for that stream. Call it right before each cuBLAS call.
cublasContext* cublas_handle();

// This thread's cuDNN handle for the current device, created on first use, with its stream
// set to current_stream(). Call it right before each cuDNN call.
cudnnContext* cudnn_handle();

namespace detail {
[[noreturn]] void throw_cublas_error(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_error(int status, const char* call, const char* file, int line);
}  // namespace detail

}  // namespace frugal::kernels::cuda

// FRUGAL_CUBLAS_CHECK(cublasSgemm(...)) / FRUGAL_CUDNN_CHECK(cudnnConvolutionForward(...)):
// a status other than success (0 in both libraries) throws frugal::Error naming the call, the
// library's status string, the file and the line.
#define FRUGAL_CUBLAS_CHECK(call)                                                                 \
  do {                                                                                            \
    const int frugal_cublas_status_ = static_cast<int>(call);                                     \
    if (frugal_cublas_status_ != 0) [[unlikely]]                                                  \
      ::frugal::kernels::cuda::detail::throw_cublas_error(frugal_cublas_status_, #call, __FILE__, \
                                                          __LINE__);                              \
  } while (0)

#define FRUGAL_CUDNN_CHECK(call)                                                                \
  do {                                                                                          \
    const int frugal_cudnn_status_ = static_cast<int>(call);                                    \
    if (frugal_cudnn_status_ != 0) [[unlikely]]                                                 \
      ::frugal::kernels::cuda::detail::throw_cudnn_error(frugal_cudnn_status_, #call, __FILE__, \
                                                         __LINE__);                             \
  } while (0)
