// FRUGAL_HOST_DEVICE marks small inline functions (Philox, ...) that CUDA kernels call as
// well as host code: `__host__ __device__` under nvcc, nothing for the plain C++ compiler.
#pragma once

#if defined(__CUDACC__)
#define FRUGAL_HOST_DEVICE __host__ __device__
#else
#define FRUGAL_HOST_DEVICE
#endif
