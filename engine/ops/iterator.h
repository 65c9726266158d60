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
  // A single value of type `dtype` read for every element: on the CPU straight from
  // `value` (no tensor needed); for a CUDA output from a 0-d tensor on its device, filled by
  // a kernel that takes the value as an argument (no copy, no wait), which the builder keeps
  // until it goes away — the kernel is queued by then, and a block freed on its stream is
  // only reused by work queued after it.
  LoopBuilder& scalar(const void* value, ScalarType dtype);
  kernels::cpu::StridedLoop build() const;

 private:
  kernels::cpu::StridedLoop loop_;
  Device device_;
  Tensor device_scalar_;
};

}  // namespace frugal
