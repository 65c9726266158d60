// Autocast on CUDA tensors against the CPU's float32: AutocastGuard(kCUDA) defaults to float16,
// every row of the policy table runs in its dtype on the GPU, mm/linear/conv2d in 16 bits match
// float32 within 16-bit precision, softmax and the losses run in float32, backward gives the
// float32 weights float32 gradients, and with a GradScaler float16 training does not underflow.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>

#include "engine/autocast_policy.h"
#include "nn/nn.h"
#include "tests/cuda/tensor_compare.h"

using namespace frugal;
using autocast::CastPolicy;
using autocast::Op;
using frugal::test::kGpu;
using frugal::test::max_relative_difference;
using frugal::test::max_scaled_difference;

namespace {

TensorOptions on_gpu(ScalarType dtype = kFloat32) { return TensorOptions(dtype).device(kGpu); }

// Runs `op` on CUDA inputs of dtype `in` (and a float32 second operand where the op has one, to
// see promotion) and returns the result, which must be on the GPU.
Tensor run_op(Op op, ScalarType in) {
  Generator gen(3);
  const Tensor x = add(randn({4, 6}, kFloat32, &gen).abs(), 0.5).to(in).to(kGpu);
  const Tensor w = randn({5, 6}, kFloat32, &gen).to(kGpu);
  const Tensor target = randint(0, 6, {4}, kInt64, &gen).to(kGpu);
  switch (op) {
    case Op::kMm:
      return mm(x, w.t());
    case Op::kBmm:
      return bmm(x.unsqueeze(0), w.t().unsqueeze(0));
    case Op::kLinear:
      return linear(x, w, zeros({5}, on_gpu()));
    case Op::kConv2d:
      return conv2d(x.view({1, 1, 4, 6}), randn({2, 1, 3, 3}).to(kGpu), zeros({2}, on_gpu()));
    case Op::kSoftmax:
      return softmax(x, 1);
    case Op::kLogSoftmax:
      return log_softmax(x, 1);
    case Op::kCrossEntropy:
      return cross_entropy(x, target);
    case Op::kNllLoss:
      return nll_loss(x, target);
    case Op::kSum:
      return sum(x);
    case Op::kMean:
      return mean(x, {1});
    case Op::kVar:
      return var(x, {1});
    case Op::kExp:
      return exp(x);
    case Op::kLog:
      return log(x);
    case Op::kPow:
      return pow(x, 2);
    case Op::kAdd:
      return add(x, w.narrow(0, 0, 4));
    case Op::kSub:
      return sub(x, w.narrow(0, 0, 4));
    case Op::kMul:
      return mul(x, w.narrow(0, 0, 4));
    case Op::kDiv:
      return div(x, w.narrow(0, 0, 4));
    case Op::kBatchNorm:
      return batch_norm(x, ones({6}, on_gpu()), zeros({6}, on_gpu()), zeros({6}, on_gpu()),
                        ones({6}, on_gpu()), true, 0.1, 1e-5);
  }
  FAIL("an op of the table has no case here");
  return {};
}

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

// The 16-bit type's precision: a few units of its rounding, as tests/cuda/device_buffer.h.
double tolerance_of(ScalarType low) { return low == kFloat16 ? 2e-3 : 1.6e-2; }

}  // namespace

TEST_CASE("cuda autocast: every op of the policy table runs in the dtype its row names",
          "[cuda][autocast]") {
  for (const std::optional<ScalarType> requested :
       {std::optional<ScalarType>(), std::optional(kBFloat16)}) {
    const ScalarType low =
        requested.value_or(kFloat16);  // CUDA's default is float16, as in PyTorch
    for (const ScalarType in : {kFloat32, low}) {
      for (const auto& rule : autocast::rules()) {
        AutocastGuard amp(kCUDA, requested);
        REQUIRE(autocast::get_dtype(kCUDA) == low);
        INFO(rule.name << " (" << autocast::policy_name(rule.policy) << ") on a CUDA "
                       << dtype_name(in) << " input under autocast " << dtype_name(low));
        const Tensor out = run_op(rule.op, in);
        CHECK(out.is_cuda());
        CHECK(out.dtype() == expected(rule.policy, in, low));
      }
    }
  }
}

TEST_CASE("cuda autocast: a CUDA guard leaves CPU ops alone, and a CPU guard CUDA ops",
          "[cuda][autocast]") {
  const Tensor a = randn({3, 3});
  const Tensor g = a.cuda();
  {
    AutocastGuard amp(kCUDA);
    CHECK(autocast::is_enabled(kCUDA));
    CHECK_FALSE(autocast::is_enabled(kCPU));
    CHECK(mm(g, g).dtype() == kFloat16);
    CHECK(mm(a, a).dtype() == kFloat32);
  }
  {
    AutocastGuard amp(kCPU);
    CHECK(mm(a, a).dtype() == kBFloat16);
    CHECK(mm(g, g).dtype() == kFloat32);
  }
  CHECK_FALSE(autocast::is_enabled(kCUDA));
  CHECK(mm(g, g).dtype() == kFloat32);
}

TEST_CASE("cuda autocast: mm, linear and conv2d in 16 bits match the CPU's float32",
          "[cuda][autocast]") {
  Generator gen(17);
  const Tensor a = randn({33, 64}, {}, &gen), b = randn({64, 47}, {}, &gen);
  const Tensor w = mul(randn({20, 64}, {}, &gen), 0.2), bias = randn({20}, {}, &gen);
  const Tensor x = randn({4, 8, 12, 12}, {}, &gen);
  const Tensor cw = mul(randn({16, 8, 3, 3}, {}, &gen), 0.2), cb = randn({16}, {}, &gen);
  const Tensor dw = randn({8, 1, 3, 3}, {}, &gen);  // depthwise: its own CUDA kernels, not cuDNN

  for (const ScalarType low : {kFloat16, kBFloat16}) {
    INFO("autocast to " << dtype_name(low));
    // What each op computes in 16 bits, on the GPU.
    Tensor mm_out, linear_out, conv_out, conv_bias_out, depthwise_out;
    {
      AutocastGuard amp(kCUDA, low);
      mm_out = mm(a.cuda(), b.cuda());
      linear_out = linear(a.cuda(), w.cuda(), bias.cuda());
      conv_out = conv2d(x.cuda(), cw.cuda(), {}, {1, 1}, {1, 1});
      conv_bias_out = conv2d(x.cuda(), cw.cuda(), cb.cuda(), {1, 1}, {1, 1});
      depthwise_out = conv2d(x.cuda(), dw.cuda(), {}, {2, 2}, {1, 1}, {1, 1}, 8);
    }
    for (const Tensor& out : {mm_out, linear_out, conv_out, conv_bias_out, depthwise_out}) {
      CHECK(out.is_cuda());
      CHECK(out.dtype() == low);
    }
    // The same float32 ops on the CPU, on inputs rounded to the 16-bit type: the GPU differs
    // only by its float32 accumulation order and the one rounding of each result to 16 bits
    // (linear adds its bias inside the GEMM), so every element is held to 16-bit precision.
    auto r = [low](const Tensor& t) { return t.to(low).to(kFloat32); };
    const double tol = tolerance_of(low);
    CHECK(max_relative_difference(mm_out, mm(r(a), r(b))) < tol);
    CHECK(max_relative_difference(linear_out, linear(r(a), r(w), r(bias))) < tol);
    CHECK(max_relative_difference(conv_out, conv2d(r(x), r(cw), {}, {1, 1}, {1, 1})) < tol);
    CHECK(max_relative_difference(depthwise_out,
                                  conv2d(r(x), r(dw), {}, {2, 2}, {1, 1}, {1, 1}, 8)) < tol);
    // cuDNN adds a convolution's bias to the already rounded result (a second rounding, of a
    // value the bias may nearly cancel): held to 16-bit precision of the result's scale.
    CHECK(max_scaled_difference(conv_bias_out, conv2d(r(x), r(cw), r(cb), {1, 1}, {1, 1})) < tol);
    // Against float32 on the exact inputs: the inputs' rounding too, measured against the
    // result's scale (a sum of products can cancel without its error cancelling).
    CHECK(max_scaled_difference(mm_out, mm(a, b)) < 4 * tol);
    CHECK(max_scaled_difference(linear_out, linear(a, w, bias)) < 4 * tol);
    CHECK(max_scaled_difference(conv_bias_out, conv2d(x, cw, cb, {1, 1}, {1, 1})) < 4 * tol);
    CHECK(max_scaled_difference(depthwise_out, conv2d(x, dw, {}, {2, 2}, {1, 1}, {1, 1}, 8)) <
          4 * tol);
  }
}

TEST_CASE(
    "cuda autocast: softmax, log_softmax and cross_entropy of float16 run in float32 like the CPU",
    "[cuda][autocast]") {
  Generator gen(19);
  // Values up to 40: exp overflows float16 there, so a softmax left in 16 bits would be inf/NaN.
  const Tensor logits = mul(randn({64, 100}, {}, &gen), 12.0).to(kFloat16);
  const Tensor target = randint(0, 100, {64}, kInt64, &gen);
  const Tensor wide = logits.to(kFloat32);  // the same values, exactly
  AutocastGuard amp(kCUDA);
  const Tensor g = logits.cuda();
  const Tensor s = softmax(g, 1), ls = log_softmax(g, 1), ce = cross_entropy(g, target.cuda());
  const Tensor nll = nll_loss(ls, target.cuda());
  for (const Tensor& out : {s, ls, ce, nll}) {
    CHECK(out.is_cuda());
    CHECK(out.dtype() == kFloat32);
  }
  CHECK(max_relative_difference(s, softmax(wide, 1)) < 1e-5);
  CHECK(max_relative_difference(ls, log_softmax(wide, 1)) < 1e-5);
  CHECK(max_relative_difference(ce, cross_entropy(wide, target)) < 1e-5);
  CHECK(max_relative_difference(nll, nll_loss(log_softmax(wide, 1), target)) < 1e-5);
  // In float32 nothing overflowed.
  CHECK(std::isfinite(sum(s).item<float>()));
}

TEST_CASE(
    "cuda autocast: backward in the forward's dtypes; float32 gradients match the CPU's float32 "
    "run",
    "[cuda][autocast]") {
  Generator gen(7);
  const Tensor w1 = mul(randn({6, 3, 3, 3}, {}, &gen), 0.3);
  const Tensor w2 = mul(randn({5, 6 * 8 * 8}, {}, &gen), 0.05);
  const Tensor b2 = mul(randn({5}, {}, &gen), 0.1);
  const Tensor x = randn({8, 3, 8, 8}, {}, &gen);
  const Tensor target = randint(0, 5, {8}, kInt64, &gen);

  // The float32 reference on the CPU.
  std::vector<Tensor> cpu_params = {w1.clone().requires_grad_(), w2.clone().requires_grad_(),
                                    b2.clone().requires_grad_()};
  const Tensor cpu_loss =
      cross_entropy(linear(relu(conv2d(x, cpu_params[0], {}, {1, 1}, {1, 1})).flatten(1),
                           cpu_params[1], cpu_params[2]),
                    target);
  cpu_loss.backward();

  for (const ScalarType low : {kFloat16, kBFloat16}) {
    INFO("autocast to " << dtype_name(low));
    std::vector<Tensor> gpu_params = {w1.cuda().requires_grad_(), w2.cuda().requires_grad_(),
                                      b2.cuda().requires_grad_()};
    const Tensor gx = x.cuda();
    Tensor loss;
    {
      AutocastGuard amp(kCUDA, low);
      const Tensor h = relu(conv2d(gx, gpu_params[0], {}, {1, 1}, {1, 1}));
      CHECK(h.dtype() == low);  // relu keeps the conv's 16 bits
      const Tensor logits = linear(h.flatten(1), gpu_params[1], gpu_params[2]);
      CHECK(logits.dtype() == low);
      CHECK(autocast::cache_size() == 3);  // each float32 weight cast once
      loss = cross_entropy(logits, target.cuda());
      CHECK(loss.dtype() == kFloat32);
      loss.backward();  // inside the region: backward ignores autocast
    }
    CHECK(autocast::cache_size() == 0);
    CHECK(max_relative_difference(loss, cpu_loss) < 4 * tolerance_of(low));
    for (std::size_t i = 0; i < gpu_params.size(); ++i) {
      INFO("parameter " << i);
      const Tensor& g = gpu_params[i].grad();
      REQUIRE(g.defined());
      CHECK(g.is_cuda());
      CHECK(g.dtype() == kFloat32);  // through the cast's backward, back to the weight's dtype
      CHECK(max_scaled_difference(g, cpu_params[i].grad()) < 10 * tolerance_of(low));
    }
  }
}

TEST_CASE("cuda autocast: with a GradScaler, float16 gradients that underflow without it train",
          "[cuda][amp]") {
  // As the CPU test of nn/amp: a loss 1e-8 times a squared error makes the gradient reaching
  // the float16 output ~1e-9, below float16's smallest subnormal, so without scaling every
  // weight gradient is 0; scaled by 65536 it survives and AdamW trains.
  auto train = [](bool use_scaler) {
    Generator gen(13);
    const Tensor x = randn({64, 16}, {}, &gen).cuda();
    const Tensor true_w = randn({1, 16}, {}, &gen).cuda();
    const Tensor y = mm(x, true_w.t());
    Tensor w = zeros({1, 16}, on_gpu()).requires_grad_();
    optim::AdamW adam({w}, optim::AdamWOptions(0.05).weight_decay(0));
    amp::GradScaler scaler(amp::GradScalerOptions{.enabled = use_scaler});
    auto loss_now = [&] {
      NoGradGuard no_grad;
      return mean(pow(sub(mm(x, w.t()), y), 2)).item<float>();
    };
    const float first = loss_now();
    bool any_gradient = false;
    for (int step = 0; step < 150; ++step) {
      adam.zero_grad();
      Tensor loss;
      {
        AutocastGuard amp(kCUDA);
        const Tensor out = linear(x, w);
        REQUIRE(out.dtype() == kFloat16);
        loss = mul(mean(pow(sub(out, y), 2)), 1e-8);
      }
      scaler.scale(loss).backward();
      REQUIRE(w.grad().is_cuda());
      any_gradient |= max(abs(w.grad())).item<float>() > 0;
      scaler.step(adam);
      scaler.update();
    }
    return std::tuple{first, loss_now(), any_gradient};
  };
  const auto [start, with_scaler, scaled_grads] = train(true);
  const auto [start2, without, plain_grads] = train(false);
  INFO("mean squared error: start " << start << ", with the scaler " << with_scaler << ", without "
                                    << without);
  CHECK(scaled_grads);
  CHECK(with_scaler < 0.02f * start);
  CHECK_FALSE(plain_grads);
  CHECK(without == start2);
}
