// GradScaler against PyTorch's semantics: growth and backoff sequences, a step skipped on an
// injected inf, the unscale_ rules, clipping after unscale_, accumulation under one scale, and
// the reason it exists: float16 gradients that underflow to zero without it.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "nn/amp/grad_scaler.h"
#include "nn/clip_grad.h"
#include "nn/nn.h"

using namespace frugal;
using Catch::Matchers::Contains;

namespace {

float at(const Tensor& t, std::int64_t i = 0) {
  return t.to(kFloat32).contiguous().data_ptr<float>()[i];
}

// A float32 parameter [n] whose gradient is set by hand.
struct Param {
  Tensor p;
  explicit Param(std::int64_t n = 4) : p(ones({n}).requires_grad_()) {}
  void grad(float value) { p.mutable_grad() = full({p.numel()}, value); }
};

}  // namespace

TEST_CASE("GradScaler: PyTorch's defaults, and the scale multiplies the loss") {
  amp::GradScaler scaler;
  CHECK(scaler.get_scale() == 65536.0);
  CHECK(scaler.options().growth_factor == 2.0);
  CHECK(scaler.options().backoff_factor == 0.5);
  CHECK(scaler.options().growth_interval == 2000);
  CHECK(at(scaler.scale(full({}, 0.5f))) == 32768.0f);
  amp::GradScaler off(amp::GradScalerOptions{.enabled = false});
  CHECK(off.get_scale() == 1.0);
  CHECK(at(off.scale(full({}, 0.5f))) == 0.5f);
}

TEST_CASE("GradScaler: growth after growth_interval clean steps, backoff after an inf") {
  Param w;
  optim::SGD sgd({w.p}, optim::SGDOptions(0.0));
  amp::GradScaler scaler(amp::GradScalerOptions{.init_scale = 8, .growth_interval = 3});
  // Clean, clean, clean (grow), inf (back off, count restarts), clean x3 (grow), NaN (back off).
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const float grads[] = {1, 1, 1, inf, 1, 1, 1, nan, 1};
  const double scales[] = {8, 8, 16, 8, 8, 8, 16, 8, 8};
  const std::int64_t trackers[] = {1, 2, 0, 0, 1, 2, 0, 0, 1};
  for (std::size_t i = 0; i < std::size(grads); ++i) {
    INFO("step " << i);
    w.grad(grads[i]);
    scaler.step(sgd);
    scaler.update();
    CHECK(scaler.get_scale() == scales[i]);
    CHECK(scaler.growth_tracker() == trackers[i]);
  }
}

TEST_CASE(
    "GradScaler: a step whose gradients hold inf is skipped, parameters and state untouched") {
  Param w;
  optim::SGD sgd({w.p}, optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions{.init_scale = 4});
  w.grad(4);  // a scaled gradient of 1
  CHECK(scaler.step(sgd));
  scaler.update();
  CHECK(at(w.p) == Approx(0.9f));
  const float momentum_before = at(sgd.state_dict().front().second);
  w.p.mutable_grad() = full({4}, 4.0f);
  w.p.mutable_grad().data_ptr<float>()[2] = std::numeric_limits<float>::infinity();
  CHECK_FALSE(scaler.step(sgd));
  scaler.update();
  CHECK(at(w.p) == Approx(0.9f));  // not stepped
  CHECK(at(sgd.state_dict().front().second) == momentum_before);
  CHECK(scaler.get_scale() == 2.0);
}

TEST_CASE(
    "GradScaler: unscale_ divides by the scale once; a second call, or one after step, is an "
    "error") {
  Param w;
  optim::SGD sgd({w.p}, optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions{.init_scale = 1024});
  w.grad(512);
  scaler.unscale_(sgd);
  CHECK(at(w.p.grad()) == 0.5f);
  CHECK_THROWS_WITH(scaler.unscale_(sgd), Contains("already called on this optimizer"));
  CHECK(scaler.step(sgd));  // uses the unscaled gradients, does not unscale again
  CHECK(at(w.p) == Approx(0.95f));
  CHECK_THROWS_WITH(scaler.unscale_(sgd), Contains("after step()"));
  CHECK_THROWS_WITH(scaler.step(sgd), Contains("already called"));
  scaler.update();
  CHECK_THROWS_WITH(scaler.update(), Contains("no inf checks"));
  w.grad(1024);
  scaler.unscale_(sgd);  // allowed again after update()
  CHECK(at(w.p.grad()) == 1.0f);
}

TEST_CASE("GradScaler: clipping after unscale_ sees the true gradients") {
  Param w(4);
  optim::SGD sgd({w.p}, optim::SGDOptions(1.0));
  amp::GradScaler scaler(amp::GradScalerOptions{.init_scale = 256});
  w.grad(256 * 3.0f);  // true gradient 3 in each of 4 entries: norm 6
  scaler.unscale_(sgd);
  const double norm = nn::utils::clip_grad_norm_({w.p}, 1.0);
  CHECK(norm == Approx(6.0));
  CHECK(at(w.p.grad()) == Approx(0.5f).epsilon(1e-5));  // 3 / 6
  scaler.step(sgd);
  scaler.update();
  CHECK(at(w.p) == Approx(0.5f).epsilon(1e-5));
}

TEST_CASE("GradScaler: micro-batches accumulate under one scale and unscale to the plain sum") {
  Generator gen(11);
  const Tensor x = randn({8, 5}, {}, &gen);
  const Tensor target = randint(0, 3, {8}, kInt64, &gen);
  Tensor w = mul(randn({3, 5}, {}, &gen), 0.3).requires_grad_();
  // Reference: the mean loss over all 8 rows in float32, no scaling.
  cross_entropy(linear(x, w), target).backward();
  const Tensor reference = w.grad().clone();
  w.mutable_grad() = Tensor();
  optim::SGD sgd({w}, optim::SGDOptions(0.0));
  amp::GradScaler scaler(amp::GradScalerOptions{.init_scale = 4096});
  for (int k = 0; k < 4; ++k) {  // 4 micro-batches of 2 rows, each loss divided by 4
    const Tensor loss =
        div(cross_entropy(linear(x.narrow(0, 2 * k, 2), w), target.narrow(0, 2 * k, 2)), 4.0);
    scaler.scale(loss).backward();
    CHECK(scaler.get_scale() == 4096.0);  // fixed between updates
  }
  scaler.unscale_(sgd);
  CHECK(at(max(abs(sub(w.grad(), reference)))) < 1e-6f);
  scaler.step(sgd);
  scaler.update();
}

TEST_CASE("GradScaler: float16 gradients that underflow without scaling train with it") {
  // A linear model under float16 autocast whose loss is small (1e-8 times a squared error):
  // the gradient reaching the float16 output is ~1e-9, below float16's smallest subnormal
  // (6e-8), so it rounds to 0 and no weight ever moves. Scaled by 65536 it is ~6e-5, survives,
  // and AdamW (invariant to the loss's size) trains as it would in float32.
  auto train = [](bool use_scaler) {
    Generator gen(13);
    const Tensor x = randn({64, 16}, {}, &gen);
    const Tensor true_w = randn({1, 16}, {}, &gen);
    const Tensor y = mm(x, true_w.t());
    Tensor w = zeros({1, 16}).requires_grad_();
    optim::AdamW adam({w}, optim::AdamWOptions(0.05).weight_decay(0));
    amp::GradScaler scaler(amp::GradScalerOptions{.enabled = use_scaler});
    auto loss_now = [&] {
      NoGradGuard no_grad;
      return at(mean(pow(sub(mm(x, w.t()), y), 2)));
    };
    const float first = loss_now();
    bool any_gradient = false;
    for (int step = 0; step < 150; ++step) {
      adam.zero_grad();
      Tensor loss;
      {
        AutocastGuard amp(kCPU, kFloat16);
        const Tensor out = linear(x, w);  // float16
        REQUIRE(out.dtype() == kFloat16);
        loss = mul(mean(pow(sub(out, y), 2)), 1e-8);
      }
      scaler.scale(loss).backward();
      any_gradient |= at(max(abs(w.grad()))) > 0;
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
  CHECK_FALSE(plain_grads);  // every gradient underflowed to 0
  CHECK(without == start2);  // so nothing trained
}

TEST_CASE("GradScaler: state_dict round trip and bad options") {
  amp::GradScaler a(amp::GradScalerOptions{.init_scale = 128, .growth_interval = 5});
  Param w;
  optim::SGD sgd({w.p}, optim::SGDOptions(0.1));
  w.grad(1);
  a.step(sgd);
  a.update();
  amp::GradScaler b;
  b.load_state_dict(a.state_dict());
  CHECK(b.get_scale() == 128.0);
  CHECK(b.growth_tracker() == 1);
  CHECK(b.options().growth_interval == 5);
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions{.growth_factor = 0.5}),
                    Contains("growth_factor"));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions{.init_scale = -1}),
                    Contains("init_scale"));
  nn::NamedTensors broken = a.state_dict();
  broken.pop_back();
  CHECK_THROWS_WITH(b.load_state_dict(broken), Contains("_growth_tracker"));
}
