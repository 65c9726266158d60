// Autocast: every row of the policy table runs in the dtype it names, the weight-cast cache
// lives exactly as long as the outermost region, backward runs in the forward's dtypes, and the
// activations saved for backward take half the bytes.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "allocator/default_allocators.h"
#include "engine/autocast_policy.h"
#include "engine/frugal.h"

using namespace frugal;
using autocast::CastPolicy;
using autocast::Op;

namespace {

// |a - b| <= atol + rtol * |b| everywhere (both float32).
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  const Tensor bound = add(mul(abs(b), rtol), atol);
  return sum(gt(abs(sub(a, b)), bound)).item<std::int64_t>() == 0;
}

std::int64_t requested_now() {
  return alloc::cpu_allocator().stats().requested_bytes.all().current;
}

// Runs `op` on inputs of dtype `in` (and a float32 second operand where the op has one, to
// see promotion) and returns the result's dtype.
ScalarType run_op(Op op, ScalarType in) {
  Generator gen(3);
  const Tensor x = add(randn({4, 6}, kFloat32, &gen).abs(), 0.5).to(in);
  const Tensor w = randn({5, 6}, kFloat32, &gen);
  const Tensor target = randint(0, 6, {4}, kInt64, &gen);
  switch (op) {
    case Op::kMm:
      return mm(x, w.t()).dtype();
    case Op::kBmm:
      return bmm(x.unsqueeze(0), w.t().unsqueeze(0)).dtype();
    case Op::kLinear:
      return linear(x, w, zeros({5})).dtype();
    case Op::kConv2d:
      return conv2d(x.view({1, 1, 4, 6}), randn({2, 1, 3, 3}), zeros({2})).dtype();
    case Op::kSoftmax:
      return softmax(x, 1).dtype();
    case Op::kLogSoftmax:
      return log_softmax(x, 1).dtype();
    case Op::kCrossEntropy:
      return cross_entropy(x, target).dtype();
    case Op::kNllLoss:
      return nll_loss(x, target).dtype();
    case Op::kSum:
      return sum(x).dtype();
    case Op::kMean:
      return mean(x, {1}).dtype();
    case Op::kVar:
      return var(x, {1}).dtype();
    case Op::kExp:
      return exp(x).dtype();
    case Op::kLog:
      return log(x).dtype();
    case Op::kPow:
      return pow(x, 2).dtype();
    case Op::kAdd:
      return add(x, w.narrow(0, 0, 4)).dtype();
    case Op::kSub:
      return sub(x, w.narrow(0, 0, 4)).dtype();
    case Op::kMul:
      return mul(x, w.narrow(0, 0, 4)).dtype();
    case Op::kDiv:
      return div(x, w.narrow(0, 0, 4)).dtype();
    case Op::kBatchNorm:
      return batch_norm(x, ones({6}), zeros({6}), zeros({6}), ones({6}), true, 0.1, 1e-5).dtype();
  }
  FAIL("an op of the table has no case here");
  return kFloat32;
}

// What the table's policy means for an input of dtype `in` with autocast dtype `low`.
ScalarType expected(CastPolicy policy, ScalarType in, ScalarType low) {
  switch (policy) {
    case CastPolicy::kLowerPrecision:
      return low;
    case CastPolicy::kFloat32:
      return kFloat32;
    case CastPolicy::kPromote:
      return promote_types(in, kFloat32);
    case CastPolicy::kInputDtype:
      return in;
  }
  return in;
}

}  // namespace

TEST_CASE("autocast: every op of the policy table runs in the dtype its row names") {
  for (const ScalarType low : {kBFloat16, kFloat16}) {
    for (const ScalarType in : {kFloat32, low}) {
      for (const auto& rule : autocast::rules()) {
        AutocastGuard amp(kCPU, low);
        INFO(rule.name << " (" << autocast::policy_name(rule.policy) << ") on " << dtype_name(in)
                       << " input under autocast " << dtype_name(low));
        CHECK(run_op(rule.op, in) == expected(rule.policy, in, low));
      }
    }
  }
}

TEST_CASE("autocast: ops outside the table keep their input's dtype, float64 is never narrowed") {
  AutocastGuard amp(kCPU, kBFloat16);
  const Tensor h = randn({2, 3, 4, 4}).to(kBFloat16);
  CHECK(relu(h).dtype() == kBFloat16);
  CHECK(max_pool2d(h, {2, 2}).dtype() == kBFloat16);
  CHECK(adaptive_avg_pool2d(h, {1, 1}).dtype() == kBFloat16);
  CHECK(dropout(h, 0.5, true).dtype() == kBFloat16);
  const Tensor d = randn({3, 3}, kFloat64);
  CHECK(mm(d, d).dtype() == kFloat64);
  CHECK(sum(d).dtype() == kFloat64);
  CHECK(argmax(h.flatten(1), 1).dtype() == kInt64);
}

TEST_CASE("autocast: off outside the guard, on inside, restored by nested guards") {
  const Tensor a = randn({2, 2});
  CHECK_FALSE(autocast::is_enabled(kCPU));
  CHECK(mm(a, a).dtype() == kFloat32);
  {
    AutocastGuard outer(kCPU, kBFloat16);
    CHECK(autocast::is_enabled(kCPU));
    CHECK_FALSE(autocast::is_enabled(kCUDA));
    CHECK(mm(a, a).dtype() == kBFloat16);
    {
      AutocastGuard inner(kCPU, kFloat16);
      CHECK(mm(a, a).dtype() == kFloat16);
      {
        AutocastGuard off(kCPU, std::nullopt, /*enabled=*/false);
        CHECK(mm(a, a).dtype() == kFloat32);
      }
      CHECK(mm(a, a).dtype() == kFloat16);
    }
    CHECK(autocast::get_dtype(kCPU) == kBFloat16);
    CHECK(mm(a, a).dtype() == kBFloat16);
  }
  CHECK(mm(a, a).dtype() == kFloat32);
  CHECK_THROWS_WITH(AutocastGuard(kCPU, kFloat64),
                    Catch::Contains("must be float16 or bfloat16, got float64"));
  CHECK_FALSE(autocast::is_enabled(kCPU));  // a refused guard changed nothing
}

TEST_CASE("autocast: a weight is cast once per outermost region and the cast freed at its exit") {
  Generator gen(5);
  Tensor w = randn({64, 32}, {}, &gen).requires_grad_();
  const Tensor x = randn({8, 32}, {}, &gen);
  const std::int64_t before = requested_now();
  Tensor y1, y2;
  {
    AutocastGuard amp;
    y1 = linear(x, w);
    CHECK(autocast::cache_size() == 1);
    {
      AutocastGuard inner;  // nested: reuses the outer region's cast
      y2 = linear(x, w);
    }
    CHECK(autocast::cache_size() == 1);  // the inner exit dropped nothing
    // Both products read the same bfloat16 copy of w: one cast node, not two.
    CHECK(y1.grad_fn()->next_edges()[1].node == y2.grad_fn()->next_edges()[1].node);
    // The input is no weight (no grad): cast per use, never cached.
    CHECK(linear(x, w).dtype() == kBFloat16);
    CHECK(autocast::cache_size() == 1);
    {
      NoGradGuard no_grad;  // a cast made without history is never cached
      const Tensor z = linear(x, w);
      CHECK(z.dtype() == kBFloat16);
    }
    CHECK(autocast::cache_size() == 1);
  }
  CHECK(autocast::cache_size() == 0);
  // Gradients reach the float32 weight through the cached cast, once per use.
  (sum(y1.to(kFloat32)) + sum(y2.to(kFloat32))).backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().dtype() == kFloat32);
  CHECK(allclose(w.grad(), mul(sum(x, {0}), 2.0).expand({64, 32}), 2e-2, 2e-2));
  y1 = Tensor();
  y2 = Tensor();
  w.mutable_grad() = Tensor();
  CHECK(requested_now() == before);  // the cast's memory went back with the graph
}

TEST_CASE(
    "autocast: backward runs in the forward's dtypes and the float32 weights get float32 grads") {
  Generator gen(7);
  const Tensor w1 = mul(randn({3, 1, 3, 3}, {}, &gen), 0.3).requires_grad_();
  const Tensor w2 = mul(randn({5, 3 * 6 * 6}, {}, &gen), 0.1).requires_grad_();
  const Tensor b2 = zeros({5}).requires_grad_();
  const Tensor x = randn({4, 1, 6, 6}, {}, &gen);
  const Tensor target = randint(0, 5, {4}, kInt64, &gen);
  auto loss_of = [&] {
    const Tensor h = relu(conv2d(x, w1, {}, {1, 1}, {1, 1}));
    return cross_entropy(linear(h.flatten(1), w2, b2), target);
  };
  const Tensor reference = loss_of();
  reference.backward();
  const Tensor g1 = w1.grad().clone(), g2 = w2.grad().clone(), gb = b2.grad().clone();
  for (Tensor p : {w1, w2, b2}) p.mutable_grad() = Tensor();

  Tensor loss;
  {
    AutocastGuard amp(kCPU, kBFloat16);
    loss = loss_of();
    CHECK(loss.dtype() == kFloat32);
    loss.backward();  // inside the region: backward ignores autocast
  }
  CHECK(std::abs(loss.item<float>() - reference.item<float>()) < 2e-2);
  CHECK(w1.grad().dtype() == kFloat32);
  CHECK(w2.grad().dtype() == kFloat32);
  CHECK(b2.grad().dtype() == kFloat32);
  CHECK(allclose(w1.grad(), g1, 5e-2, 2e-2));
  CHECK(allclose(w2.grad(), g2, 5e-2, 2e-2));
  CHECK(allclose(b2.grad(), gb, 5e-2, 2e-2));
}

TEST_CASE("autocast: a conv net's saved activations take half the bytes") {
  Generator gen(9);
  const Tensor w1 = mul(randn({16, 8, 3, 3}, {}, &gen), 0.1).requires_grad_();
  const Tensor w2 = mul(randn({16, 16, 3, 3}, {}, &gen), 0.1).requires_grad_();
  const Tensor x = randn({8, 8, 16, 16}, {}, &gen);
  auto graph_bytes = [&](bool amp_on) {
    const std::int64_t before = requested_now();
    AutocastGuard amp(kCPU, kBFloat16, amp_on);
    Tensor h = conv2d(x, w1, {}, {1, 1}, {1, 1});
    h = relu(h);
    h = conv2d(h, w2, {}, {1, 1}, {1, 1});
    h = relu(h);
    Tensor loss = sum(h);
    h = Tensor();
    return requested_now() - before;  // what the graph holds for backward, plus the loss
  };
  const std::int64_t fp32 = graph_bytes(false), bf16 = graph_bytes(true);
  INFO("float32 graph " << fp32 << " bytes, bfloat16 graph " << bf16 << " bytes");
  // Saved in float32: the outputs of the two ReLUs (each [8, 16, 16, 16]; relu 1's is also
  // conv 2's input, the convs' own outputs are not kept) and the 4-byte loss; x and the
  // weights belong to the caller. Under autocast the same two activations in bfloat16, plus
  // what autocast itself adds: the bfloat16 copy of x that conv 1 saves, and the weight casts.
  const std::int64_t activation = 8 * 16 * 16 * 16;
  CHECK(fp32 == 2 * activation * 4 + 4);
  const std::int64_t casts = x.numel() * 2 + (w1.numel() + w2.numel()) * 2;
  CHECK(bf16 == 2 * activation * 2 + casts + 4);
}
