// One cuBLAS and one cuDNN handle per (thread, device), bound to the thread's current stream;
// cuBLAS's workspace comes from frugal's CUDA caching allocator so it appears in the stats.
#include "kernels/cuda/handles.h"

#include <cudnn.h>

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "allocator/caching_allocator.h"
#include "allocator/default_allocators.h"
#include "common/cuda_check.h"
#include "common/error.h"
#include "kernels/cuda/cublas_library.h"
#include "kernels/cuda/stream.h"

namespace frugal::kernels::cuda {

namespace detail {

void throw_cublas_error(int status, const char* call, const char* file, int line) {
  throw Error(std::string("cuBLAS call failed: ") + call + ": " +
              cublas().get_status_string(static_cast<cublasStatus_t>(status)) + " (status " +
              std::to_string(status) + ") at " + file + ":" + std::to_string(line));
}

void throw_cudnn_error(int status, const char* call, const char* file, int line) {
  throw Error(std::string("cuDNN call failed: ") + call + ": " +
              cudnnGetErrorString(static_cast<cudnnStatus_t>(status)) + " (status " +
              std::to_string(status) + ") at " + file + ":" + std::to_string(line));
}

}  // namespace detail

namespace {

// A cuBLAS handle with one workspace per stream it has run on: a workspace must not be shared
// by two streams, whose kernels may run at the same time.
struct CublasEntry {
  cublasHandle_t handle = nullptr;
  std::map<StreamId, alloc::Allocation> workspaces;
};

// cuBLAS's recommended workspace: 32 MiB on Hopper and later, 4 MiB before.
std::size_t cublas_workspace_bytes(int device) {
  int major = 0;
  FRUGAL_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9 ? std::size_t{32} << 20 : std::size_t{4} << 20;
}

// Handles freed by exited threads, per device, for the next thread to reuse (creating a handle
// costs milliseconds and device memory). The pool is never destroyed: destroying handles at
// process exit may run after the CUDA runtime has shut down.
struct Pool {
  std::mutex mutex;
  std::array<std::vector<CublasEntry*>, kMaxDevices> cublas;
  std::array<std::vector<cudnnHandle_t>, kMaxDevices> cudnn;
};

Pool& pool() {
  static Pool* const instance = new Pool;  // leaked on purpose, see Pool
  return *instance;
}

// This thread's handles; on thread exit they go back to the pool, not to the library.
struct ThreadHandles {
  std::array<CublasEntry*, kMaxDevices> cublas{};
  std::array<cudnnHandle_t, kMaxDevices> cudnn{};

  ~ThreadHandles() {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    for (int d = 0; d < kMaxDevices; ++d) {
      if (cublas[d] != nullptr) p.cublas[d].push_back(cublas[d]);
      if (cudnn[d] != nullptr) p.cudnn[d].push_back(cudnn[d]);
    }
  }
};

ThreadHandles& thread_handles() {
  thread_local ThreadHandles handles;
  return handles;
}

int checked_device() {
  const int device = current_device();
  FRUGAL_CHECK(device >= 0 && device < kMaxDevices, "CUDA device " + std::to_string(device) +
                                                        " is beyond frugal's limit of " +
                                                        std::to_string(kMaxDevices));
  return device;
}

CublasEntry* acquire_cublas(int device) {
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!p.cublas[device].empty()) {
      CublasEntry* entry = p.cublas[device].back();
      p.cublas[device].pop_back();
      return entry;
    }
  }
  auto entry = std::make_unique<CublasEntry>();
  FRUGAL_CUBLAS_CHECK(cublas().create(&entry->handle));
  // 16-bit products reduce in float, as the CPU reference does (rounded once at the end),
  // rather than through split-K partial sums stored in the output's precision.
  const cublasStatus_t math = cublas().set_math_mode(
      entry->handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                               CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  if (math != CUBLAS_STATUS_SUCCESS) {
    cublas().destroy(entry->handle);
    FRUGAL_CUBLAS_CHECK(math);
  }
  return entry.release();
}

cudnnHandle_t acquire_cudnn(int device) {
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!p.cudnn[device].empty()) {
      cudnnHandle_t handle = p.cudnn[device].back();
      p.cudnn[device].pop_back();
      return handle;
    }
  }
  cudnnHandle_t handle = nullptr;
  FRUGAL_CUDNN_CHECK(cudnnCreate(&handle));
  return handle;
}

}  // namespace

cublasContext* cublas_handle() {
  const int device = checked_device();
  CublasEntry*& entry = thread_handles().cublas[device];
  if (entry == nullptr) entry = acquire_cublas(device);
  const StreamId stream = current_stream();
  FRUGAL_CUBLAS_CHECK(cublas().set_stream(entry->handle, reinterpret_cast<cudaStream_t>(stream)));
  auto it = entry->workspaces.find(stream);
  if (it == entry->workspaces.end()) {
    // Allocated on the stream it serves, so the caching allocator orders its reuse there. It
    // lives as long as the handle (the allocator's stats count it as in use).
    alloc::Allocation ws =
        alloc::cuda_allocator(device).allocate(cublas_workspace_bytes(device), stream);
    it = entry->workspaces.emplace(stream, ws).first;
  }
  // cublasSetStream resets the workspace to cuBLAS's own, so this comes after it every time.
  FRUGAL_CUBLAS_CHECK(cublas().set_workspace(entry->handle, it->second.ptr, it->second.size));
  return entry->handle;
}

cudnnContext* cudnn_handle() {
  const int device = checked_device();
  cudnnHandle_t& handle = thread_handles().cudnn[device];
  if (handle == nullptr) handle = acquire_cudnn(device);
  FRUGAL_CUDNN_CHECK(cudnnSetStream(handle, reinterpret_cast<cudaStream_t>(current_stream())));
  return handle;
}

}  // namespace frugal::kernels::cuda
