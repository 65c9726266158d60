// Builds the StridedLoop an elementwise kernel runs on from tensors: inputs are broadcast
// to the output's shape (stride 0 where they repeat), size-1 dims are dropped and
// dimensions that are contiguous in every operand are merged, so that most loops become
// one flat run and the kernel's contiguous fast path applies.
#pragma once

#include "engine/tensor.h"
#include "kernels/cpu/loops.h"

namespace frugal {

class LoopBuilder {
 public:
  // Operand 0: the output, which defines the shape.
  explicit LoopBuilder(const Tensor& out);
  // An input broadcast to the output's shape (its dims align at the right).
  LoopBuilder& input(const Tensor& t);
  // A single value read for every element (a scalar operand, no tensor needed).
  LoopBuilder& scalar(const void* value);
  kernels::cpu::StridedLoop build() const;

 private:
  kernels::cpu::StridedLoop loop_;
};

}  // namespace frugal
