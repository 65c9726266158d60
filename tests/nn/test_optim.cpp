// Optimizers against known update sequences (worked by hand) and against a float64 reference
// of PyTorch's formulas on random gradients; their state round trips; the schedules.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "nn/nn.h"

using namespace frugal;
using Catch::Matchers::Contains;

namespace {

double at(const Tensor& t, std::int64_t i = 0) {
  return t.to(kFloat64).contiguous().data_ptr<double>()[i];
}

// A one-element float64 parameter with a given gradient.
Tensor param(double value) { return full({1}, value, kFloat64).requires_grad_(); }
void set_grad(Tensor& p, double g) { p.mutable_grad() = full({1}, g, kFloat64); }

}  // namespace

TEST_CASE("SGD with momentum: p = 1, g = 1, lr 0.1, momentum 0.9") {
  Tensor p = param(1);
  optim::SGD sgd({p}, optim::SGDOptions(0.1).momentum(0.9));
  const double expect[] = {0.9, 0.71, 0.439};  // buf = 1, 1.9, 2.71
  for (double e : expect) {
    set_grad(p, 1);
    sgd.step();
    CHECK(at(p) == Approx(e));
  }
}

TEST_CASE("SGD with Nesterov momentum and with weight decay") {
  Tensor p = param(1);
  optim::SGD nesterov({p}, optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  for (double e : {0.81, 0.539}) {
    set_grad(p, 1);
    nesterov.step();
    CHECK(at(p) == Approx(e));
  }
  Tensor q = param(1);
  optim::SGD decay({q}, optim::SGDOptions(0.1).weight_decay(0.5));
  for (double e : {0.85, 0.7075}) {
    set_grad(q, 1);
    decay.step();
    CHECK(at(q) == Approx(e));
  }
  CHECK_THROWS_WITH(optim::SGD({param(1)}, optim::SGDOptions(0.1).nesterov(true)),
                    Contains("Nesterov"));
}

TEST_CASE("AdamW: constant gradient moves by lr after decoupled decay") {
  Tensor p = param(1);
  optim::AdamW adamw({p}, optim::AdamWOptions(0.1).weight_decay(0.01));
  set_grad(p, 1);
  adamw.step();
  CHECK(at(p) == Approx(0.999 - 0.1).epsilon(1e-7));
  set_grad(p, 1);
  adamw.step();
  CHECK(at(p) == Approx(0.899 * 0.999 - 0.1).epsilon(1e-7));
}

TEST_CASE("SGD and AdamW match a float64 reference of PyTorch's formulas on random gradients") {
  Generator gen(5);
  const Tensor start = randn({257}, kFloat64, &gen);
  std::vector<Tensor> grads;
  for (int i = 0; i < 6; ++i) grads.push_back(randn({257}, kFloat64, &gen));
  const double* s = start.data_ptr<double>();
  SECTION("SGD, momentum 0.9, dampening 0.1, weight decay 1e-2") {
    Tensor p = start.clone().requires_grad_();
    optim::SGD sgd({p}, optim::SGDOptions(0.05).momentum(0.9).dampening(0.1).weight_decay(1e-2));
    std::vector<double> ref(s, s + 257), buf(257);
    for (int t = 0; t < 6; ++t) {
      p.mutable_grad() = grads[static_cast<std::size_t>(t)].clone();
      sgd.step();
      const double* g = grads[static_cast<std::size_t>(t)].data_ptr<double>();
      for (int i = 0; i < 257; ++i) {
        const double d = g[i] + 1e-2 * ref[static_cast<std::size_t>(i)];
        buf[static_cast<std::size_t>(i)] =
            t == 0 ? d : 0.9 * buf[static_cast<std::size_t>(i)] + 0.9 * d;
        ref[static_cast<std::size_t>(i)] -= 0.05 * buf[static_cast<std::size_t>(i)];
      }
    }
    for (int i = 0; i < 257; ++i)
      CHECK(at(p, i) == Approx(ref[static_cast<std::size_t>(i)]).epsilon(1e-12));
  }
  SECTION("AdamW, lr 1e-2, betas 0.8 / 0.99, weight decay 0.1") {
    Tensor p = start.clone().requires_grad_();
    optim::AdamW adamw({p}, optim::AdamWOptions(1e-2).betas(0.8, 0.99).weight_decay(0.1));
    std::vector<double> ref(s, s + 257), m(257), v(257);
    for (int t = 1; t <= 6; ++t) {
      p.mutable_grad() = grads[static_cast<std::size_t>(t - 1)].clone();
      adamw.step();
      const double* g = grads[static_cast<std::size_t>(t - 1)].data_ptr<double>();
      for (std::size_t i = 0; i < 257; ++i) {
        ref[i] *= 1 - 1e-2 * 0.1;
        m[i] = 0.8 * m[i] + 0.2 * g[i];
        v[i] = 0.99 * v[i] + 0.01 * g[i] * g[i];
        const double mh = m[i] / (1 - std::pow(0.8, t)), vh = v[i] / (1 - std::pow(0.99, t));
        ref[i] -= 1e-2 * mh / (std::sqrt(vh) + 1e-8);
      }
    }
    for (int i = 0; i < 257; ++i)
      CHECK(at(p, i) == Approx(ref[static_cast<std::size_t>(i)]).epsilon(1e-10));
  }
}

TEST_CASE("optimizer state round trips: a restored optimizer continues identically") {
  Generator gen(6);
  const Tensor start = randn({10}, kFloat64, &gen);
  const Tensor g1 = randn({10}, kFloat64, &gen), g2 = randn({10}, kFloat64, &gen);
  for (bool adam : {false, true}) {
    INFO((adam ? "AdamW" : "SGD"));
    auto make = [adam](Tensor& p) -> std::unique_ptr<optim::Optimizer> {
      if (adam)
        return std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, optim::AdamWOptions(0.01));
      return std::make_unique<optim::SGD>(std::vector<Tensor>{p},
                                          optim::SGDOptions(0.1).momentum(0.9));
    };
    Tensor a = start.clone().requires_grad_(), b = start.clone().requires_grad_();
    auto oa = make(a);
    a.mutable_grad() = g1.clone();
    oa->step();
    {
      NoGradGuard no_grad;
      b.copy_(a);
    }
    auto ob = make(b);
    ob->load_state_dict(oa->state_dict());
    a.mutable_grad() = g2.clone();
    b.mutable_grad() = g2.clone();
    oa->step();
    ob->step();
    CHECK(eq(a, b).sum().item<std::int64_t>() == 10);
  }
}

TEST_CASE("zero_grad sets gradients to none by default") {
  Tensor p = param(1);
  optim::SGD sgd({p}, optim::SGDOptions(0.1));
  set_grad(p, 2);
  sgd.zero_grad(false);
  CHECK(at(p.grad()) == 0);
  sgd.zero_grad();
  CHECK_FALSE(p.grad().defined());
  sgd.step();  // no gradient: nothing happens
  CHECK(at(p) == 1);
}

TEST_CASE("StepLR and CosineAnnealingLR") {
  Tensor p = param(1);
  optim::SGD sgd({p}, optim::SGDOptions(1.0));
  optim::StepLR step(sgd, 2, 0.5);
  std::vector<double> seen;
  for (int e = 0; e < 5; ++e) {
    seen.push_back(sgd.lr());
    step.step();
  }
  CHECK(seen == std::vector<double>{1, 1, 0.5, 0.5, 0.25});
  optim::SGD sgd2({p}, optim::SGDOptions(0.2));
  optim::CosineAnnealingLR cosine(sgd2, 4, 0.0);
  cosine.set_epoch(2);
  CHECK(sgd2.lr() == Approx(0.1));
  cosine.step();
  CHECK(sgd2.lr() == Approx(0.1 * (1 + std::cos(M_PI * 3 / 4))));
  cosine.step();
  CHECK(sgd2.lr() == Approx(0.0).margin(1e-15));
  CHECK_THROWS_WITH(optim::StepLR(sgd, 0), Contains("step_size"));
}

TEST_CASE("a few hundred SGD steps on a Fashion-MNIST-sized problem make the loss fall") {
  manual_seed(7);
  // Separable synthetic images: class k brightens row block k.
  Tensor images = mul(randn({256, 1, 28, 28}), 0.3);
  std::vector<std::int64_t> labels(256);
  {
    NoGradGuard no_grad;
    for (std::int64_t i = 0; i < 256; ++i) {
      labels[static_cast<std::size_t>(i)] = i % 10;
      images.select(0, i).narrow(1, (i % 10) * 2, 2).add_(1.0);
    }
  }
  const Tensor target = tensor(labels);
  auto net = nn::cnn();
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    const std::int64_t start = (step * 32) % 256;
    Tensor loss =
        cross_entropy(net->forward(images.narrow(0, start, 32)), target.narrow(0, start, 32));
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
    sgd.zero_grad();
    loss.backward();
    sgd.step();
  }
  CHECK(last < 0.25 * first);
}

TEST_CASE("optimizer state entries that name no parameter are refused (found by fuzz_checkpoint)") {
  // "E.momentum_buffer" once escaped as std::invalid_argument from std::stoul, and
  // "1x.exp_avg" passed as parameter 1.
  Tensor w = randn({3}, TensorOptions().requires_grad(true));
  optim::SGD sgd({w}, optim::SGDOptions(0.1).momentum(0.9));
  CHECK_THROWS_WITH(sgd.load_state_dict({{"E.momentum_buffer", zeros({3})}}),
                    Contains("SGD") && Contains("'E.momentum_buffer'"));
  CHECK_THROWS_WITH(sgd.load_state_dict({{"1.momentum_buffer", zeros({3})}}),
                    Contains("names parameter 1 of 1"));
  optim::AdamW adamw({w}, optim::AdamWOptions(1e-3));
  CHECK_THROWS_WITH(adamw.load_state_dict({{"0x.exp_avg", zeros({3})}}), Contains("'0x.exp_avg'"));
  CHECK_THROWS_WITH(adamw.load_state_dict({{"0.step", full({}, NAN)}}), Contains("one integer"));
  sgd.load_state_dict({{"0.momentum_buffer", ones({3})}});  // a good entry still loads
  CHECK(sgd.state_dict().size() == 1);
}
