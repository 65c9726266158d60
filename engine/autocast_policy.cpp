// The autocast policy table: which dtype each op runs in inside an AutocastGuard. Ops not
// listed (relu, pooling, dropout, views, copies) run in their input's dtype, so a 16-bit
// activation stays 16-bit through them. Each op in the table applies its row at the top of
// its front-end function, before autograd records anything, so what it saves for backward is
// already in the dtype it ran in.
#include "engine/autocast_policy.h"

#include <array>

namespace frugal::autocast {

namespace {

constexpr std::array kRules = {
    // Products: nearly all of a CNN's arithmetic and most of its saved activations. Their
    // kernels accumulate in float32, so only the stored operands lose precision.
    Rule{Op::kMm, "mm", CastPolicy::kLowerPrecision, "a GEMM; accumulates in float32"},
    Rule{Op::kBmm, "bmm", CastPolicy::kLowerPrecision, "batched GEMM; accumulates in float32"},
    Rule{Op::kLinear, "linear", CastPolicy::kLowerPrecision, "a GEMM; accumulates in float32"},
    Rule{Op::kConv2d, "conv2d", CastPolicy::kLowerPrecision,
         "dense, pointwise and depthwise convolution; accumulates in float32"},
    // Ops whose result degrades visibly in 16 bits: exponentials overflow float16, long sums
    // lose the small terms, and losses feed every gradient.
    Rule{Op::kSoftmax, "softmax", CastPolicy::kFloat32, "exp overflows float16; sums of exps"},
    Rule{Op::kLogSoftmax, "log_softmax", CastPolicy::kFloat32, "exp and log of a sum"},
    Rule{Op::kCrossEntropy, "cross_entropy", CastPolicy::kFloat32, "a loss: the root of backward"},
    Rule{Op::kNllLoss, "nll_loss", CastPolicy::kFloat32, "a loss: the root of backward"},
    Rule{Op::kSum, "sum", CastPolicy::kFloat32, "a reduction: small terms vanish in 16 bits"},
    Rule{Op::kMean, "mean", CastPolicy::kFloat32, "a reduction"},
    Rule{Op::kVar, "var", CastPolicy::kFloat32, "a reduction of squares"},
    Rule{Op::kExp, "exp", CastPolicy::kFloat32, "overflows float16 beyond 11"},
    Rule{Op::kLog, "log", CastPolicy::kFloat32, "loses relative precision near 1"},
    Rule{Op::kPow, "pow", CastPolicy::kFloat32, "overflows and underflows quickly"},
    // Binary arithmetic on mixed inputs (a float32 bias added to a bfloat16 activation, say):
    // the op's own type promotion already computes in the widest type, converting as it reads,
    // with no cast copy; listed so the table tells the whole story.
    Rule{Op::kAdd, "add", CastPolicy::kPromote, "promotes natively, no copy"},
    Rule{Op::kSub, "sub", CastPolicy::kPromote, "promotes natively, no copy"},
    Rule{Op::kMul, "mul", CastPolicy::kPromote, "promotes natively, no copy"},
    Rule{Op::kDiv, "div", CastPolicy::kPromote, "promotes natively, no copy"},
    // Batch norm reads and writes the activation in its own dtype (16 bits stay 16 bits) but
    // computes mean and variance in float32 or wider against float32 parameters and running
    // statistics, which is what the numbers need.
    Rule{Op::kBatchNorm, "batch_norm", CastPolicy::kInputDtype,
         "16-bit activations, float32 statistics and parameters"},
};

}  // namespace

std::span<const Rule> rules() { return kRules; }

CastPolicy policy(Op op) {
  for (const Rule& r : kRules)
    if (r.op == op) return r.policy;
  return CastPolicy::kInputDtype;
}

const char* policy_name(CastPolicy policy) {
  switch (policy) {
    case CastPolicy::kLowerPrecision:
      return "lower_precision_fp";
    case CastPolicy::kFloat32:
      return "fp32";
    case CastPolicy::kPromote:
      return "promote";
    case CastPolicy::kInputDtype:
      return "input dtype";
  }
  return "?";
}

}  // namespace frugal::autocast
