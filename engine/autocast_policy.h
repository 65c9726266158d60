// The autocast policy: for each op that autocast touches, the dtype it runs in. The table
// itself is in autocast_policy.cpp, the one place to read (or change) what runs low.
#pragma once

#include <span>

namespace frugal::autocast {

enum class CastPolicy {
  kLowerPrecision,  // float32 inputs are cast to the autocast dtype (float16 or bfloat16)
  kFloat32,         // 16-bit inputs are cast to float32: precision matters more than bytes
  kPromote,         // mixed floating inputs run in the widest of their types
  kInputDtype,      // runs in the input's dtype; the kernel keeps its statistics in float32
};

enum class Op {
  kMm,
  kBmm,
  kLinear,
  kConv2d,
  kSoftmax,
  kLogSoftmax,
  kCrossEntropy,
  kNllLoss,
  kSum,
  kMean,
  kVar,
  kExp,
  kLog,
  kPow,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kBatchNorm,
};

struct Rule {
  Op op;
  const char* name;  // the op's function name
  CastPolicy policy;
  const char* why;
};

// Every row of the table, in its order.
std::span<const Rule> rules();
// The policy of one op.
CastPolicy policy(Op op);
const char* policy_name(CastPolicy policy);

}  // namespace frugal::autocast
