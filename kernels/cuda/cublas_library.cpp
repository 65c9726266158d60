// Opens libcublas.so.<major> with dlopen and looks up the functions of CublasLibrary: first
// through the loader's search path, then in the CUDA toolkit's library folder of the build.
#include "kernels/cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

#include "common/error.h"

#ifndef FRUGAL_CUDA_LIBRARY_DIR
#define FRUGAL_CUDA_LIBRARY_DIR ""
#endif

namespace frugal::kernels::cuda {

namespace {

const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

void* open_library() {
  if (void* handle = dlopen(kSoname.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  const std::string first_error = dlerror();
  const std::string in_toolkit = std::string(FRUGAL_CUDA_LIBRARY_DIR) + "/" + kSoname;
  if (void* handle = dlopen(in_toolkit.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
  throw Error("cannot load cuBLAS for a GEMM on the GPU: " + first_error + "; " + dlerror() +
              " (put the CUDA toolkit's library folder on LD_LIBRARY_PATH)");
}

template <class F>
void look_up(void* library, F& function, const char* name) {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (function == nullptr)
    throw Error("cuBLAS (" + kSoname + ") has no function " + name + ": it is older than the " +
                std::to_string(CUBLAS_VER_MAJOR) + ".x frugal was built with");
}

CublasLibrary load() {
  void* library = open_library();
  CublasLibrary api{};
  look_up(library, api.create, "cublasCreate_v2");
  look_up(library, api.destroy, "cublasDestroy_v2");
  look_up(library, api.set_stream, "cublasSetStream_v2");
  look_up(library, api.set_workspace, "cublasSetWorkspace_v2");
  look_up(library, api.set_math_mode, "cublasSetMathMode");
  look_up(library, api.get_status_string, "cublasGetStatusString");
  look_up(library, api.gemm_ex, "cublasGemmEx_64");
  look_up(library, api.gemm_strided_batched_ex, "cublasGemmStridedBatchedEx_64");
  return api;
}

}  // namespace

const CublasLibrary& cublas() {
  // A static whose initialisation throws is initialised again on the next call, so a failed
  // load reaches every caller as an error and a later call tries again.
  static const CublasLibrary api = load();
  return api;
}

}  // namespace frugal::kernels::cuda
