// How every reduction walks its input: a plan that drops size-1 dims, puts the reduced dims
// innermost and coalesces neighbours, then one of two loops — reduce runs of the innermost
// dim per output (row reductions), or update a block of outputs per reduced position.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/reduce.h"

namespace frugal::kernels::cpu::detail {

struct ReducePlan {
  // Kept dims in the input's order, which is also the contiguous output's order.
  int nkeep = 0;
  std::int64_t keep_sizes[kMaxReduceDims] = {};
  std::int64_t keep_strides[kMaxReduceDims] = {};
  std::int64_t keep_out_strides[kMaxReduceDims] = {};
  // Reduced dims, outermost first: the innermost has the smallest input stride. There is
  // always at least one (of size 1 when nothing is reduced).
  int nred = 0;
  std::int64_t red_sizes[kMaxReduceDims] = {};
  std::int64_t red_strides[kMaxReduceDims] = {};
  std::int64_t out_numel = 1;
  std::int64_t red_numel = 1;
};

// Validates the dims and the mask (throws frugal::Error naming `op`) and builds the plan.
ReducePlan plan_reduction(const StridedDims& in, std::uint32_t reduce_mask, const char* op);

// Validates `dim` and returns the mask for a one-dim reduction.
std::uint32_t single_dim_mask(const StridedDims& in, int dim, const char* op);

// Throws when outputs exist but the reduced set is empty: amax and the index ops have no
// value to give there.
void check_nonempty(const ReducePlan& plan, const char* op);

// Below this much work (elements read) a reduction stays on the calling thread.
inline constexpr std::int64_t kReduceGrain = 32768;
// Outputs updated together by the column loop: their accumulators live on the stack.
inline constexpr int kColumnBlock = 128;

// Op interface shared by both loops:
//   Acc init() const;
//   void run(Acc&, const T* p, int64 n, int64 stride, int64 index0) const;  // n >= 1
//   void combine(Acc& a, const Acc& b) const;  // b's indices follow a's
//   void write(int64 out_index, const Acc&, int64 count) const;
//   void col_update(Acc* acc, const T* p, int64 lane_stride, int w, int64 r) const;
// col_update folds reduced position r (in iteration order, 0 first) into w accumulators.

// Folds the reduced positions [begin, end) (linear, innermost dim fastest) under `base`.
template <class T, class Op>
typename Op::Acc reduce_range(const ReducePlan& p, const Op& op, const T* base, std::int64_t begin,
                              std::int64_t end) {
  typename Op::Acc acc = op.init();
  const int last = p.nred - 1;
  const std::int64_t inner_n = p.red_sizes[last];
  const std::int64_t inner_s = p.red_strides[last];
  std::int64_t index[kMaxReduceDims];
  std::int64_t rest = begin / inner_n;
  std::int64_t offset = 0;
  for (int d = last - 1; d >= 0; --d) {
    index[d] = rest % p.red_sizes[d];
    rest /= p.red_sizes[d];
    offset += index[d] * p.red_strides[d];
  }
  std::int64_t j = begin % inner_n;
  for (std::int64_t pos = begin; pos < end;) {
    const std::int64_t n = std::min(inner_n - j, end - pos);
    op.run(acc, base + offset + j * inner_s, n, inner_s, pos);
    pos += n;
    j = 0;
    for (int d = last - 1; d >= 0; --d) {
      offset += p.red_strides[d];
      if (++index[d] < p.red_sizes[d]) break;
      offset -= index[d] * p.red_strides[d];
      index[d] = 0;
    }
  }
  return acc;
}

// Offset in the input of output element `o` (kept dims only).
inline std::int64_t kept_offset(const ReducePlan& p, std::int64_t o) {
  std::int64_t offset = 0;
  for (int d = p.nkeep - 1; d >= 0; --d) {
    offset += (o % p.keep_sizes[d]) * p.keep_strides[d];
    o /= p.keep_sizes[d];
  }
  return offset;
}

// Row reductions: each output folds its own runs. A few outputs over a long reduction (a
// whole-tensor sum) split the reduction instead, into a number of pieces fixed by the size
// alone, so that the result does not depend on the thread count.
template <class T, class Op>
void run_rows(const ReducePlan& p, const Op& op, const T* in) {
  constexpr std::int64_t kPiece = 65536;
  constexpr int kMaxPieces = 16;
  if (p.out_numel < 16 && p.red_numel >= 2 * kPiece) {
    const int pieces = static_cast<int>(std::min<std::int64_t>(kMaxPieces, p.red_numel / kPiece));
    for (std::int64_t o = 0; o < p.out_numel; ++o) {
      const T* base = in + kept_offset(p, o);
      typename Op::Acc partial[kMaxPieces] = {};
      parallel_for(0, pieces, 1, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t k = b; k < e; ++k)
          partial[k] =
              reduce_range(p, op, base, p.red_numel * k / pieces, p.red_numel * (k + 1) / pieces);
      });
      for (int k = 1; k < pieces; ++k) op.combine(partial[0], partial[k]);
      op.write(o, partial[0], p.red_numel);
    }
    return;
  }
  const std::int64_t grain = std::max<std::int64_t>(1, kReduceGrain / p.red_numel);
  parallel_for(0, p.out_numel, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t o = b; o < e; ++o)
      op.write(o, reduce_range(p, op, in + kept_offset(p, o), 0, p.red_numel), p.red_numel);
  });
}

// Column reductions, for inputs whose smallest stride is a kept dim (a bias gradient: [N, C]
// over N): blocks of up to kColumnBlock neighbouring outputs are updated together once per
// reduced position, so the input is read along its rows.
template <class T, class Op>
void run_columns(const ReducePlan& p, const Op& op, const T* in, int lane_dim) {
  const std::int64_t nv = p.keep_sizes[lane_dim];
  const std::int64_t sv = p.keep_strides[lane_dim];
  const std::int64_t ov = p.keep_out_strides[lane_dim];
  const std::int64_t blocks = (nv + kColumnBlock - 1) / kColumnBlock;
  const std::int64_t groups = p.out_numel / nv;
  const std::int64_t work = p.red_numel * std::min<std::int64_t>(nv, kColumnBlock);
  const std::int64_t grain = std::max<std::int64_t>(1, kReduceGrain / work);
  const int last = p.nred - 1;
  parallel_for(0, groups * blocks, grain, [&](std::int64_t b, std::int64_t e) {
    typename Op::Acc acc[kColumnBlock];
    for (std::int64_t t = b; t < e; ++t) {
      // Offsets of the group (every kept dim but the lane dim) in the input and output.
      std::int64_t g = t / blocks, in_off = 0, out_off = 0;
      for (int d = p.nkeep - 1; d >= 0; --d) {
        if (d == lane_dim) continue;
        const std::int64_t i = g % p.keep_sizes[d];
        g /= p.keep_sizes[d];
        in_off += i * p.keep_strides[d];
        out_off += i * p.keep_out_strides[d];
      }
      const std::int64_t j0 = (t % blocks) * kColumnBlock;
      const int w = static_cast<int>(std::min<std::int64_t>(kColumnBlock, nv - j0));
      const T* base = in + in_off + j0 * sv;
      for (int j = 0; j < w; ++j) acc[j] = op.init();
      std::int64_t index[kMaxReduceDims] = {};
      std::int64_t offset = 0;
      for (std::int64_t r = 0; r < p.red_numel;) {
        for (std::int64_t i = 0; i < p.red_sizes[last]; ++i, ++r)
          op.col_update(acc, base + offset + i * p.red_strides[last], sv, w, r);
        for (int d = last - 1; d >= 0; --d) {
          offset += p.red_strides[d];
          if (++index[d] < p.red_sizes[d]) break;
          offset -= index[d] * p.red_strides[d];
          index[d] = 0;
        }
      }
      for (int j = 0; j < w; ++j) op.write(out_off + (j0 + j) * ov, acc[j], p.red_numel);
    }
  });
}

// The kept dim to use as lanes: the one with the smallest nonzero stride, when it is smaller
// than the innermost reduced stride; -1 means the row loop suits better.
int column_lane_dim(const ReducePlan& p);

// Runs `op` with whichever loop suits the layout.
template <class T, class Op>
void run_reduction(const ReducePlan& p, const Op& op, const T* in) {
  if (p.out_numel == 0 || p.red_numel == 0) return;
  const int lane_dim = column_lane_dim(p);
  if (lane_dim >= 0) {
    run_columns(p, op, in, lane_dim);
  } else {
    run_rows(p, op, in);
  }
}

}  // namespace frugal::kernels::cpu::detail
