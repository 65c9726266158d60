// Elementwise kernels over a StridedLoop: unary and binary math, the fused backward
// formulas of activations, comparisons, where, fills and casts. Arithmetic on float16 and
// bfloat16 is carried out in float.
#pragma once

#include <cstdint>

#include "kernels/cpu/loops.h"

namespace frugal::kernels::cpu {

enum class UnaryOp : std::uint8_t {
  Neg,
  Exp,
  Log,
  Sqrt,
  Abs,
  Relu,
  Sigmoid,
  Tanh,
  Gelu,
  Clamp,
  Reciprocal,
  Square,
  Sign,
};

enum class BinaryOp : std::uint8_t {
  Add,  // a + alpha * b
  Sub,  // a - alpha * b
  Mul,
  Div,
  Pow,
  ReluBackward,     // grad * (output > 0)
  SigmoidBackward,  // grad * y * (1 - y), y the output
  TanhBackward,     // grad * (1 - y^2), y the output
  GeluBackward,     // grad * gelu'(x), x the input
  ClampBackward,    // grad * (lo <= x <= hi), bounds in (alpha, beta)
};

enum class CompareOp : std::uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

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

}  // namespace frugal::kernels::cpu
