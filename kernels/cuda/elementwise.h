// The CUDA elementwise kernels over a StridedLoop whose data pointers are device pointers:
// the same functions, op codes and type sets as kernels/cpu/elementwise.h, launched on stream().
#pragma once

#include <cstdint>

#include "kernels/cpu/elementwise.h"

namespace frugal::kernels::cuda {

using cpu::BinaryOp;
using cpu::CompareOp;
using cpu::StridedLoop;
using cpu::UnaryOp;

// Operands: 0 = out (T), 1 = input (T). Clamp uses lo/hi (a NaN bound is "none").
template <class T>
void unary(UnaryOp op, const StridedLoop& loop, double lo = 0, double hi = 0);

// Operands: 0 = out, 1 = a, 2 = b, all T. alpha/beta parameterise Add, Sub and Clamp.
template <class T>
void binary(BinaryOp op, const StridedLoop& loop, double alpha = 1, double beta = 0);

// Operands: 0 = out (bool), 1 = a (T), 2 = b (T).
template <class T>
void compare(CompareOp op, const StridedLoop& loop);

// Operands: 0 = out (T), 1 = condition (bool), 2 = a (T), 3 = b (T): out = cond ? a : b.
template <class T>
void where(const StridedLoop& loop);

// Operand 0 (T) = value.
template <class T>
void fill(const StridedLoop& loop, T value);

// Operand 0 (Dst) = operand 1 (Src), converted.
template <class Dst, class Src>
void cast(const StridedLoop& loop);

}  // namespace frugal::kernels::cuda
