// cuBLAS, opened with dlopen on the first GEMM on a GPU instead of linked into every program:
// loading libcublasLt alone costs a process about 210 MiB of resident memory (its relocations),
// which a CPU run of a CUDA build of frugal should not pay. Included by kernels/cuda only.
#pragma once

#include <cublas_v2.h>

namespace frugal::kernels::cuda {

// The cuBLAS functions frugal calls, each with the type of the function it names.
struct CublasLibrary {
  decltype(&::cublasCreate_v2) create;
  decltype(&::cublasDestroy_v2) destroy;
  decltype(&::cublasSetStream_v2) set_stream;
  decltype(&::cublasSetWorkspace_v2) set_workspace;
  decltype(&::cublasSetMathMode) set_math_mode;
  decltype(&::cublasGetStatusString) get_status_string;
  decltype(&::cublasGemmEx_64) gemm_ex;
  decltype(&::cublasGemmStridedBatchedEx_64) gemm_strided_batched_ex;
};

// The library, opened on the first call (once, thread-safe). Throws frugal::Error naming the
// file and the loader's reason when libcublas or one of its functions cannot be found; a later
// call tries again.
const CublasLibrary& cublas();

}  // namespace frugal::kernels::cuda
