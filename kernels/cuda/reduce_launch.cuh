// The CUDA reduction launch (internal to reduce.cu): the CPU's plan (size-1 dims dropped, reduced
// dims ordered by stride and coalesced), then a row kernel (a warp or a block per output) or a
// column kernel (a thread per output, when the kept dims are the contiguous ones), each
// optionally split into pieces; and how an op's accumulators combine over a warp and a block.
#pragma once

#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "allocator/default_allocators.h"
#include "kernels/cpu/reduce_loops.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/scratch.h"

namespace frugal::kernels::cuda {

namespace {

using cpu::detail::ReducePlan;

// ---------------------------------------------------------------------------------------
// Accumulator plumbing shared by every op.
//
// An op provides (all __device__):
//   Local init() const;                           // a thread's running state
//   void fold(Local&, const T* p, int64 r) const;  // r: the position in the reduced set
//   Acc finish(const Local&) const;               // a thread's result
//   Acc identity() const;                         // what a thread without positions gives
//   void combine(Acc& a, const Acc& b) const;     // need not be given a's positions first
//   void write(int64 out_index, const Acc&, int64 count) const;
// Acc must be trivially default-constructible (it lives in __shared__ arrays).
// ---------------------------------------------------------------------------------------

template <class C>
__device__ __forceinline__ bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return v != v;
  } else {
    return false;
  }
}

template <class C, bool kMax>
__device__ __forceinline__ bool better(C v, C best) {
  if constexpr (kMax) {
    return v > best;
  } else {
    return v < best;
  }
}

// The start value of a max (kMax) or min reduction: the identity of the comparison.
template <class C, bool kMax>
__device__ __forceinline__ C extreme_init() {
  if constexpr (std::is_floating_point_v<C>) {
    return kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  } else {
    return kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
}

// __shfl_down_sync of any trivially copyable value, 32 bits at a time.
template <class A>
__device__ __forceinline__ A shfl_down(const A& v, int offset) {
  constexpr int kWords = static_cast<int>((sizeof(A) + 3) / 4);
  unsigned words[kWords] = {};
  memcpy(words, &v, sizeof(A));
#pragma unroll
  for (int k = 0; k < kWords; ++k) words[k] = __shfl_down_sync(0xffffffffu, words[k], offset);
  A out;
  memcpy(&out, words, sizeof(A));
  return out;
}

// The combination of the warp's 32 values, in lane 0 (a fixed tree: deterministic).
template <class Op, class Acc>
__device__ __forceinline__ Acc warp_combine(const Op& op, Acc a) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const Acc other = shfl_down(a, offset);
    op.combine(a, other);
  }
  return a;
}

// The combination over a 1-d block, in thread 0. Every thread of the block must call it.
template <class Op, class Acc>
__device__ Acc block_combine(const Op& op, Acc a) {
  __shared__ Acc partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  a = warp_combine(op, a);
  __syncthreads();  // partial may still be read by the previous call
  if (lane == 0) partial[warp] = a;
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>((blockDim.x + 31) >> 5);
    a = warp_combine(op, lane < warps ? partial[lane] : op.identity());
  }
  return a;
}

// Offset in the input of output element `o` (kept dims only).
__device__ __forceinline__ std::int64_t kept_input_offset(const ReducePlan& p, std::int64_t o) {
  std::int64_t offset = 0;
  for (int d = p.nkeep - 1; d >= 0; --d) {
    offset += (o % p.keep_sizes[d]) * p.keep_strides[d];
    o /= p.keep_sizes[d];
  }
  return offset;
}

// Folds the reduced positions begin, begin + step, ... below end. The plan has coalesced the
// reduced dims, so one dim (a strided run) is the common case and skips the divisions.
template <class T, class Op>
__device__ __forceinline__ void fold_range(const ReducePlan& p, const Op& op,
                                           typename Op::Local& local, const T* base,
                                           std::int64_t begin, std::int64_t end,
                                           std::int64_t step) {
  if (p.nred == 1) {
    const std::int64_t s = p.red_strides[0];
    for (std::int64_t r = begin; r < end; r += step) op.fold(local, base + r * s, r);
    return;
  }
  for (std::int64_t r = begin; r < end; r += step) {
    std::int64_t rest = r, offset = 0;
    for (int d = p.nred - 1; d >= 0; --d) {
      offset += (rest % p.red_sizes[d]) * p.red_strides[d];
      rest /= p.red_sizes[d];
    }
    op.fold(local, base + offset, r);
  }
}

// Row kernel: kGroup threads (a warp, or the whole block) per slice; a slice is one output,
// or one of `pieces` consecutive ranges of its reduced set, whose result goes to
// partial[piece * out_numel + output] for finalize_kernel.
template <int kGroup, class T, class Op>
__global__ void __launch_bounds__(kBlockSize)
    reduce_rows_kernel(ReducePlan p, Op op, const T* in, std::int64_t pieces,
                       typename Op::Acc* partial) {
  const std::int64_t per_block = blockDim.x / kGroup;
  const std::int64_t slices = p.out_numel * pieces;
  const int t = static_cast<int>(threadIdx.x % kGroup);
  // The loop bound is uniform across a group, so block_combine's barriers are reached by all.
  for (std::int64_t s = blockIdx.x * per_block + threadIdx.x / kGroup; s < slices;
       s += gridDim.x * per_block) {
    const std::int64_t o = s / pieces, k = s % pieces;
    const std::int64_t begin = p.red_numel * k / pieces;
    const std::int64_t end = p.red_numel * (k + 1) / pieces;
    typename Op::Local local = op.init();
    fold_range(p, op, local, in + kept_input_offset(p, o), begin + t, end, kGroup);
    typename Op::Acc a = op.finish(local);
    if constexpr (kGroup == 32) {
      a = warp_combine(op, a);
    } else {
      a = block_combine(op, a);
    }
    if (t == 0) {
      if (pieces == 1) {
        op.write(o, a, p.red_numel);
      } else {
        partial[k * p.out_numel + o] = a;
      }
    }
  }
}

// Column kernel: a block is 32 neighbouring outputs along the lane dim (threadIdx.x, so a
// warp reads along contiguous memory) times kColumnRows threads splitting the reduced set.
constexpr int kColumnRows = 8;

template <class T, class Op>
__global__ void __launch_bounds__(32 * kColumnRows)
    reduce_columns_kernel(ReducePlan p, Op op, const T* in, int lane_dim, std::int64_t pieces,
                          typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  __shared__ Acc rows[kColumnRows][32];
  const std::int64_t nv = p.keep_sizes[lane_dim];
  const std::int64_t sv = p.keep_strides[lane_dim];
  const std::int64_t ov = p.keep_out_strides[lane_dim];
  const std::int64_t lane_blocks = (nv + 31) / 32;
  const std::int64_t tiles = p.out_numel / nv * lane_blocks * pieces;
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const std::int64_t k = tile % pieces;
    const std::int64_t lane_block = tile / pieces % lane_blocks;
    std::int64_t g = tile / pieces / lane_blocks, in_off = 0, out_off = 0;
    for (int d = p.nkeep - 1; d >= 0; --d) {
      if (d == lane_dim) continue;
      const std::int64_t i = g % p.keep_sizes[d];
      g /= p.keep_sizes[d];
      in_off += i * p.keep_strides[d];
      out_off += i * p.keep_out_strides[d];
    }
    const std::int64_t j = lane_block * 32 + threadIdx.x;
    const std::int64_t begin = p.red_numel * k / pieces;
    const std::int64_t end = p.red_numel * (k + 1) / pieces;
    typename Op::Local local = op.init();
    if (j < nv)
      fold_range(p, op, local, in + in_off + j * sv, begin + threadIdx.y, end, kColumnRows);
    Acc a = op.finish(local);
    __syncthreads();  // the previous tile's reads of `rows` are done
    rows[threadIdx.y][threadIdx.x] = a;
    __syncthreads();
    if (threadIdx.y == 0 && j < nv) {
      for (int y = 1; y < kColumnRows; ++y) op.combine(a, rows[y][threadIdx.x]);
      const std::int64_t o = out_off + j * ov;
      if (pieces == 1) {
        op.write(o, a, p.red_numel);
      } else {
        partial[k * p.out_numel + o] = a;
      }
    }
  }
}

// Combines each output's pieces in order and writes it.
template <class Op>
__global__ void finalize_kernel(Op op, const typename Op::Acc* partial, std::int64_t out_numel,
                                std::int64_t pieces, std::int64_t count) {
  FRUGAL_CUDA_KERNEL_LOOP(o, out_numel) {
    typename Op::Acc a = partial[o];
    for (std::int64_t k = 1; k < pieces; ++k) op.combine(a, partial[k * out_numel + o]);
    op.write(o, a, count);
  }
}

template <class U>
__global__ void fill_kernel(U* out, std::int64_t n, U value) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) { out[i] = value; }
}

// Enough blocks (or tiles) in flight to fill a large GPU several times; chosen from the sizes
// alone, so that results do not depend on the device.
constexpr std::int64_t kTargetSlices = 1024;
constexpr std::int64_t kMaxPieces = 1024;
// Reduced sets up to this size take a warp per output rather than a block.
constexpr std::int64_t kWarpRowMax = 1024;
// The least work per piece: a row piece gives each of a block's threads 64 positions, a
// column piece each of its kColumnRows threads 256.
constexpr std::int64_t kRowPieceMin = 64 * kBlockSize;
constexpr std::int64_t kColumnPieceMin = 256 * kColumnRows;

std::int64_t pieces_for(std::int64_t units, std::int64_t red_numel, std::int64_t piece_min) {
  if (units >= kTargetSlices) return 1;
  const std::int64_t wanted = (kTargetSlices + units - 1) / units;
  return std::clamp<std::int64_t>(std::min(wanted, red_numel / piece_min), 1, kMaxPieces);
}

// Runs `op` over the plan with whichever kernel suits the layout. Launches nothing when there
// is nothing to compute.
template <class T, class Op>
void launch_reduction(const ReducePlan& p, const Op& op, const T* in) {
  using Acc = typename Op::Acc;
  if (p.out_numel == 0 || p.red_numel == 0) return;
  const int lane_dim = cpu::detail::column_lane_dim(p);
  const cudaStream_t s = stream();
  std::int64_t pieces;
  if (lane_dim >= 0) {
    const std::int64_t tiles =
        p.out_numel / p.keep_sizes[lane_dim] * ((p.keep_sizes[lane_dim] + 31) / 32);
    pieces = pieces_for(tiles, p.red_numel, kColumnPieceMin);
  } else if (p.red_numel <= kWarpRowMax) {
    pieces = 1;
  } else {
    pieces = pieces_for(p.out_numel, p.red_numel, kRowPieceMin);
  }
  Acc* partial = nullptr;
  std::unique_ptr<Scratch> workspace;
  if (pieces > 1) {
    workspace = std::make_unique<Scratch>(sizeof(Acc) * static_cast<std::size_t>(pieces) *
                                          static_cast<std::size_t>(p.out_numel));
    partial = static_cast<Acc*>(workspace->get());
  }
  if (lane_dim >= 0) {
    const std::int64_t tiles =
        p.out_numel / p.keep_sizes[lane_dim] * ((p.keep_sizes[lane_dim] + 31) / 32) * pieces;
    const unsigned grid = static_cast<unsigned>(std::clamp<std::int64_t>(tiles, 1, 65536));
    reduce_columns_kernel<T, Op>
        <<<grid, dim3(32, kColumnRows), 0, s>>>(p, op, in, lane_dim, pieces, partial);
    FRUGAL_CUDA_CHECK_LAUNCH();
  } else if (p.red_numel <= kWarpRowMax) {
    reduce_rows_kernel<32, T, Op>
        <<<blocks_for(p.out_numel, kBlockSize / 32), kBlockSize, 0, s>>>(p, op, in, 1, nullptr);
    FRUGAL_CUDA_CHECK_LAUNCH();
  } else {
    reduce_rows_kernel<kBlockSize, T, Op>
        <<<blocks_for(p.out_numel * pieces, 1), kBlockSize, 0, s>>>(p, op, in, pieces, partial);
    FRUGAL_CUDA_CHECK_LAUNCH();
  }
  if (pieces > 1) {
    finalize_kernel<Op><<<blocks_for(p.out_numel), kBlockSize, 0, s>>>(op, partial, p.out_numel,
                                                                       pieces, p.red_numel);
    FRUGAL_CUDA_CHECK_LAUNCH();
  }
}

template <class U>
void fill(U* out, std::int64_t n, U value) {
  if (n == 0) return;
  fill_kernel<U><<<blocks_for(n), kBlockSize, 0, stream()>>>(out, n, value);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
T quiet_nan() {
  return static_cast<T>(std::numeric_limits<compute_t<T>>::quiet_NaN());
}

}  // namespace

}  // namespace frugal::kernels::cuda
