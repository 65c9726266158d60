// The strided loop every elementwise kernel runs on: up to four operands (operand 0 is the
// output) over one common shape, each with its own byte strides (0 where it broadcasts).
// for_each_run hands the kernel runs of the innermost dimension, split across threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/parallel.h"

namespace frugal::kernels::cpu {

inline constexpr int kMaxLoopDims = 8;
inline constexpr int kMaxLoopOperands = 4;

struct StridedLoop {
  int ndim = 0;  // outermost first; 0 is a single element
  int nops = 0;
  std::int64_t sizes[kMaxLoopDims] = {};
  char* data[kMaxLoopOperands] = {};
  std::int64_t strides[kMaxLoopOperands][kMaxLoopDims] = {};  // in bytes

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
};

// Below this many elements a loop runs on the calling thread: a fork costs microseconds.
inline constexpr std::int64_t kElementwiseGrain = 32768;

// Calls body(char* const* ptrs, const std::int64_t* strides, std::int64_t n) for runs of
// the innermost dimension: ptrs[k] is operand k's first element, strides[k] its step.
template <class Body>
void for_each_run(const StridedLoop& loop, std::int64_t grain, const Body& body) {
  const int nd = std::max(loop.ndim, 1);
  std::int64_t sizes[kMaxLoopDims];
  for (int d = 0; d < nd; ++d) sizes[d] = loop.ndim == 0 ? 1 : loop.sizes[d];
  const int last = nd - 1;
  std::int64_t inner_strides[kMaxLoopOperands];
  for (int k = 0; k < loop.nops; ++k) inner_strides[k] = loop.ndim == 0 ? 0 : loop.strides[k][last];

  parallel_for(0, loop.numel(), grain, [&](std::int64_t begin, std::int64_t end) {
    std::int64_t index[kMaxLoopDims];
    std::int64_t rest = begin;
    for (int d = last; d >= 0; --d) {
      index[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    char* ptrs[kMaxLoopOperands];
    for (std::int64_t pos = begin; pos < end;) {
      for (int k = 0; k < loop.nops; ++k) {
        std::int64_t offset = 0;
        for (int d = 0; d < loop.ndim; ++d) offset += index[d] * loop.strides[k][d];
        ptrs[k] = loop.data[k] + offset;
      }
      const std::int64_t run = std::min(sizes[last] - index[last], end - pos);
      body(static_cast<char* const*>(ptrs), static_cast<const std::int64_t*>(inner_strides), run);
      pos += run;
      index[last] += run;
      for (int d = last; d > 0 && index[d] == sizes[d]; --d) {
        index[d] = 0;
        ++index[d - 1];
      }
    }
  });
}

}  // namespace frugal::kernels::cpu
