// What every CUDA kernel file shares: the stream to launch on, launch sizes for grid-stride
// loops, loads and stores that compute 16-bit types in float (frugal's Half and BFloat16
// have the bit layout of __half and __nv_bfloat16), and warp, block and group sums and maxima.
// Included only by .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "common/cuda_check.h"
#include "common/half.h"
#include "kernels/cuda/stream.h"

namespace frugal::kernels::cuda {

inline cudaStream_t stream() { return reinterpret_cast<cudaStream_t>(current_stream()); }

// Threads per block for one-thread-per-element kernels.
inline constexpr int kBlockSize = 256;

// Blocks for a grid-stride loop over n items: enough to fill every multiprocessor many
// times over, never more than the items need, and at least one (n == 0 launches nothing).
inline unsigned blocks_for(std::int64_t n, int block = kBlockSize) {
  const std::int64_t wanted = (n + block - 1) / block;
  return static_cast<unsigned>(std::clamp<std::int64_t>(wanted, 1, 65536));
}

// Grid-stride loop: for (i = global thread index; i < n; i += all threads).
#define FRUGAL_CUDA_KERNEL_LOOP(i, n)                                                              \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

// Element loads and stores in the compute type: float for Half and BFloat16, T otherwise.
template <class T>
__device__ __forceinline__ T load(const T* p) {
  return *p;
}
__device__ __forceinline__ float load(const Half* p) {
  return __half2float(*reinterpret_cast<const __half*>(p));
}
__device__ __forceinline__ float load(const BFloat16* p) {
  return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
}

template <class T>
__device__ __forceinline__ void store(T* p, compute_t<T> v) {
  *p = static_cast<T>(v);
}
__device__ __forceinline__ void store(Half* p, float v) {
  *reinterpret_cast<__half*>(p) = __float2half_rn(v);
}
__device__ __forceinline__ void store(BFloat16* p, float v) {
  *reinterpret_cast<__nv_bfloat16*>(p) = __float2bfloat16_rn(v);
}

// The sum over a warp, in every lane.
template <class A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum over the block, returned to every thread. All threads of the block must call it
// (it synchronises); blockDim.x a multiple of 32, at most 1024.
template <class A>
__device__ A block_sum(A v) {
  __shared__ A partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? partial[lane] : A(0);
  return warp_sum(v);
}

// exp in the compute type: expf for float, exp for double.
__device__ __forceinline__ float exp_c(float v) { return expf(v); }
__device__ __forceinline__ double exp_c(double v) { return exp(v); }

// The max of the group's values, ignoring NaN (which reaches every output through exp
// anyway), in every thread of the group. All threads of the group must call it.
template <int kGroup, class C>
__device__ __forceinline__ C group_max(C v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const C other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = other > v ? other : v;
  }
  if constexpr (kGroup > 32) {
    __shared__ C partial[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();  // partial may still be read by the previous call
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = lane < kGroup / 32 ? partial[lane] : -std::numeric_limits<C>::infinity();
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      const C other = __shfl_xor_sync(0xffffffffu, v, offset);
      v = other > v ? other : v;
    }
  }
  return v;
}

// The sum over a group of kGroup threads: a warp (32) or the whole block.
template <int kGroup, class A>
__device__ __forceinline__ A group_sum(A v) {
  if constexpr (kGroup == 32) {
    return warp_sum(v);
  } else {
    return block_sum(v);
  }
}

}  // namespace frugal::kernels::cuda
