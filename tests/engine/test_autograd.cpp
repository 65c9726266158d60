// Autograd's contract: leaf accumulation, retain_graph, the freed-graph and version-counter
// errors, hooks, detach, NoGradGuard and InferenceMode, diamond graphs, long chains.
#include <catch2/catch.hpp>

#include "engine/frugal.h"

using namespace frugal;
using Catch::Matchers::Contains;

namespace {
double at(const Tensor& t, std::int64_t i) {
  return t.to(kFloat64).contiguous().data_ptr<double>()[i];
}
}  // namespace

TEST_CASE("leaf gradients accumulate across backward calls") {
  Tensor w = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  (w * w).sum().backward();
  CHECK(at(w.grad(), 2) == 6);
  (w * 3.0).sum().backward();
  CHECK(at(w.grad(), 2) == 9);
  CHECK(w.is_leaf());
  Tensor y = w * 2.0;
  CHECK_FALSE(y.is_leaf());
  CHECK(y.grad_fn());
  CHECK(std::string(y.grad_fn()->name()) == "mul");
}

TEST_CASE("a diamond graph sums the gradients of both paths") {
  Tensor x = tensor({2.0}, kFloat64).requires_grad_();
  Tensor a = x * 3.0, b = exp(x);
  (a * b + a).sum().backward();  // d/dx (3x e^x + 3x) = 3e^x + 3x e^x + 3
  const double e = std::exp(2.0);
  CHECK(at(x.grad(), 0) == Approx(3 * e + 6 * e + 3));
}

TEST_CASE("backward through a freed graph is a clear error; retain_graph keeps it") {
  Tensor x = ones({3}, kFloat64).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  CHECK(at(x.grad(), 0) == 4);
  CHECK_THROWS_WITH(y.backward(), Contains("backward through the graph a second time") &&
                                      Contains("retain_graph"));
}

TEST_CASE("backward on a non-scalar needs a gradient of the output's shape") {
  Tensor x = ones({2, 2}).requires_grad_();
  Tensor y = x * 2.0;
  CHECK_THROWS_WITH(y.backward(), Contains("[2, 2]"));
  CHECK_THROWS_WITH(y.backward(ones({3})), Contains("[3]"));
  y.backward(full({2, 2}, 0.5));
  CHECK(at(x.grad(), 3) == 1);
  CHECK_THROWS_WITH(ones({2}).sum().backward(), Contains("does not require grad"));
}

TEST_CASE("an in-place change to a saved tensor is an error naming the op") {
  Tensor x = randn({4}).requires_grad_();
  Tensor h = x * 2.0;
  Tensor y = sigmoid(h);  // saves its output
  y.add_(1);              // ... which is then modified
  CHECK_THROWS_WITH(y.sum().backward(), Contains("modified by an in-place operation") &&
                                            Contains("sigmoid") && Contains("version"));
  Tensor a = x * 1.0;
  Tensor b = a * a;  // saves a
  a.mul_(2.0);
  CHECK_THROWS_WITH(b.sum().backward(), Contains("mul"));
}

TEST_CASE("in-place ops bump the version counter shared by views") {
  Tensor x = zeros({4});
  Tensor v = x.narrow(0, 1, 2);
  const auto v0 = x._version();
  v.add_(1);
  CHECK(x._version() == v0 + 1);
  x.mul_(2.0);
  x.relu_();
  x.zero_();
  x.fill_(3);
  x.copy_(ones({4}));
  CHECK(v._version() == v0 + 6);
}

TEST_CASE("in-place rules: leaves that require grad, views while recording") {
  Tensor w = ones({3}).requires_grad_();
  CHECK_THROWS_WITH(w.add_(1), Contains("leaf") && Contains("NoGradGuard"));
  {
    NoGradGuard no_grad;
    w.add_(1);  // as an optimizer step does
  }
  CHECK(at(w, 0) == 2);
  Tensor h = w * 1.0;
  CHECK_THROWS_WITH(h.narrow(0, 0, 1).mul_(2.0), Contains("view"));
}

TEST_CASE("in-place relu on a non-leaf backpropagates through the rebased history") {
  Tensor x = tensor({-1.0, 2.0}, kFloat64).requires_grad_();
  Tensor h = x * 3.0;
  h.relu_();
  h.sum().backward();
  CHECK(at(x.grad(), 0) == 0);
  CHECK(at(x.grad(), 1) == 3);
}

TEST_CASE("hooks see and may replace gradients; retain_grad keeps a non-leaf's") {
  Tensor x = ones({2}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  double seen = 0;
  h.register_hook([&](const Tensor& g) {
    seen = at(g, 0);
    return Tensor();
  });
  const unsigned doubling = x.register_hook([](const Tensor& g) { return g * 2.0; });
  h.retain_grad();
  (h * 5.0).sum().backward();
  CHECK(seen == 5);
  CHECK(at(h.grad(), 1) == 5);
  CHECK(at(x.grad(), 0) == 20);  // 5 * 2, doubled by the hook
  x.remove_hook(doubling);
  x.mutable_grad() = Tensor();
  (x * 1.0).sum().backward();
  CHECK(at(x.grad(), 0) == 1);
}

TEST_CASE("detach, NoGradGuard and InferenceMode record nothing") {
  Tensor x = ones({2}).requires_grad_();
  CHECK_FALSE(x.detach().requires_grad());
  CHECK(x.detach().is_alias_of(x));
  {
    NoGradGuard no_grad;
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
    {
      AutoGradMode enable(true);
      CHECK((x * 2.0).requires_grad());
    }
  }
  CHECK((x * 2.0).requires_grad());
  Tensor inference;
  {
    InferenceMode guard;
    CHECK(InferenceMode::is_enabled());
    inference = x * 2.0;
    CHECK_FALSE(inference.requires_grad());
  }
  CHECK_FALSE(InferenceMode::is_enabled());
  CHECK_THROWS_WITH(mul(x, inference), Contains("inference tensor") && Contains("InferenceMode"));
}

TEST_CASE("a 100000-op chain runs backward and frees without deep recursion") {
  Tensor x = ones({1}, kFloat64).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y.sum().backward();
  CHECK(at(x.grad(), 0) == 1);
  y = Tensor();  // destroying the graph must not overflow the stack
}

TEST_CASE("gradients flow only to inputs that need them") {
  Tensor a = ones({2, 3}).requires_grad_();
  Tensor b = ones({3, 4});
  mm(a, b).sum().backward();
  CHECK(a.grad().defined());
  CHECK_FALSE(b.grad().defined());
  CHECK(a.grad().sizes() == IntArrayRef{2, 3});
  CHECK(at(a.grad(), 0) == 4);
}
