// gradcheck of every differentiable op: analytic gradients against central differences in
// float64 on seeded random inputs. One test case per op (and per interesting variant), so
// that the CTest listing is the list of checked ops.
#include <catch2/catch.hpp>

#include "gradcheck.h"

using namespace frugal;
using frugal::testing::gradcheck;
using frugal::testing::random_inputs;
using Inputs = std::vector<Tensor>;

namespace {

void check(const frugal::testing::OpFn& f, const Inputs& inputs,
           frugal::testing::GradcheckOptions options = {}) {
  const std::string report = gradcheck(f, inputs, options);
  INFO(report);
  CHECK(report.empty());
}

// Positive inputs for log, sqrt, pow with fractional exponents, div's denominator.
Tensor positive(const std::vector<std::int64_t>& shape, std::uint64_t seed) {
  Generator gen(seed);
  return add(rand(shape, kFloat64, &gen), 0.5).detach().requires_grad_();
}

// Values apart from each other and from 0 (kinks of relu/abs/clamp/max lie far from them).
Tensor spread(const std::vector<std::int64_t>& shape, std::uint64_t seed) {
  Generator gen(seed);
  const std::int64_t n = shape_numel(shape);
  Tensor perm = randn({n}, kFloat64, &gen);
  Tensor x = empty(shape, kFloat64);
  double* p = x.data_ptr<double>();
  for (std::int64_t i = 0; i < n; ++i)
    p[i] = (perm.data_ptr<double>()[i] > 0 ? 1 : -1) *
           (0.113 + 0.05 * static_cast<double>((i * 7) % n));
  return x.requires_grad_();
}

}  // namespace

// --- Elementwise arithmetic (with broadcasting) ---
TEST_CASE("gradcheck: add (broadcast, alpha)") {
  check([](const Inputs& x) { return add(x[0], x[1], 2.5); }, random_inputs({{3, 4}, {4}}));
}
TEST_CASE("gradcheck: add scalar") {
  check([](const Inputs& x) { return add(x[0], 3); }, random_inputs({{5}}));
}
TEST_CASE("gradcheck: sub (broadcast, alpha)") {
  check([](const Inputs& x) { return sub(x[0], x[1], 0.5); }, random_inputs({{2, 1, 3}, {4, 1}}));
}
TEST_CASE("gradcheck: rsub (scalar - tensor)") {
  check([](const Inputs& x) { return 2.0 - x[0]; }, random_inputs({{2, 3}}));
}
TEST_CASE("gradcheck: mul (broadcast)") {
  check([](const Inputs& x) { return mul(x[0], x[1]); }, random_inputs({{2, 3, 4}, {3, 1}}));
}
TEST_CASE("gradcheck: mul scalar") {
  check([](const Inputs& x) { return x[0] * -1.5; }, random_inputs({{6}}));
}
TEST_CASE("gradcheck: div (broadcast)") {
  check([](const Inputs& x) { return div(x[0], x[1]); },
        {random_inputs({{2, 3}})[0], positive({3}, 2)});
}
TEST_CASE("gradcheck: div scalar") {
  check([](const Inputs& x) { return x[0] / 4.0; }, random_inputs({{3}}));
}
TEST_CASE("gradcheck: rdiv (scalar / tensor)") {
  check([](const Inputs& x) { return 3.0 / x[0]; }, {positive({2, 2}, 3)});
}
TEST_CASE("gradcheck: pow") {
  check([](const Inputs& x) { return pow(x[0], 2.5); }, {positive({4}, 4)});
  check([](const Inputs& x) { return pow(x[0], 3); }, random_inputs({{4}}));
}
TEST_CASE("gradcheck: neg") {
  check([](const Inputs& x) { return neg(x[0]); }, random_inputs({{3, 2}}));
}

// --- Unary math and activations ---
TEST_CASE("gradcheck: exp") {
  check([](const Inputs& x) { return exp(x[0]); }, random_inputs({{2, 3}}));
}
TEST_CASE("gradcheck: log") {
  check([](const Inputs& x) { return log(x[0]); }, {positive({2, 3}, 5)});
}
TEST_CASE("gradcheck: sqrt") {
  check([](const Inputs& x) { return sqrt(x[0]); }, {positive({2, 3}, 6)});
}
TEST_CASE("gradcheck: abs") {
  check([](const Inputs& x) { return abs(x[0]); }, {spread({2, 3}, 7)});
}
TEST_CASE("gradcheck: relu") {
  check([](const Inputs& x) { return relu(x[0]); }, {spread({3, 4}, 8)});
}
TEST_CASE("gradcheck: sigmoid") {
  check([](const Inputs& x) { return sigmoid(x[0]); }, random_inputs({{3, 4}}));
}
TEST_CASE("gradcheck: tanh") {
  check([](const Inputs& x) { return tanh(x[0]); }, random_inputs({{3, 4}}));
}
TEST_CASE("gradcheck: gelu") {
  check([](const Inputs& x) { return gelu(x[0]); }, random_inputs({{3, 4}}));
}
TEST_CASE("gradcheck: clamp") {
  check([](const Inputs& x) { return clamp(x[0], -0.3, 0.4); }, {spread({12}, 9)});
  check([](const Inputs& x) { return clamp(x[0], std::nullopt, 0.2); }, {spread({12}, 10)});
}
TEST_CASE("gradcheck: where") {
  const Tensor cond = tensor(std::vector<bool>{true, false, true, false, false, true}, {2, 3});
  check([cond](const Inputs& x) { return where(cond, x[0], x[1]); }, random_inputs({{2, 3}, {3}}));
}

// --- In-place ops (on non-leaf tensors, whose history they rebase) ---
TEST_CASE("gradcheck: add_ in place") {
  check(
      [](const Inputs& x) {
        Tensor y = x[0] * 1.0;
        y.add_(x[1], 2);
        return y;
      },
      random_inputs({{2, 3}, {3}}));
}
TEST_CASE("gradcheck: mul_ in place") {
  check(
      [](const Inputs& x) {
        Tensor y = x[0] * 1.0;
        y.mul_(x[1]);
        return y;
      },
      random_inputs({{2, 3}, {2, 3}}));
  check(
      [](const Inputs& x) {
        Tensor y = x[0] * 1.0;
        y.mul_(3.0);
        return y;
      },
      random_inputs({{4}}));
}
TEST_CASE("gradcheck: relu_ in place") {
  check(
      [](const Inputs& x) {
        Tensor y = x[0] * 1.0;
        y.relu_();
        return y;
      },
      {spread({6}, 11)});
}
TEST_CASE("gradcheck: copy_ in place") {
  check(
      [](const Inputs& x) {
        Tensor y = x[0] * 1.0;
        y.copy_(x[1]);
        return y * x[0];
      },
      random_inputs({{2, 3}, {3}}));
}

// --- Views and copies ---
TEST_CASE("gradcheck: view and reshape") {
  check([](const Inputs& x) { return x[0].view({3, 4}) * 2.0; }, random_inputs({{2, 6}}));
  check([](const Inputs& x) { return x[0].t().reshape({-1}); }, random_inputs({{3, 4}}));
}
TEST_CASE("gradcheck: transpose and permute") {
  check([](const Inputs& x) { return x[0].transpose(0, 2).contiguous(); },
        random_inputs({{2, 3, 4}}));
  check([](const Inputs& x) { return x[0].permute({2, 0, 1}) * 1.0; }, random_inputs({{2, 3, 4}}));
}
TEST_CASE("gradcheck: narrow, slice and select") {
  check([](const Inputs& x) { return x[0].narrow(1, 1, 2); }, random_inputs({{3, 4}}));
  check([](const Inputs& x) { return x[0].slice(0, 0, 5, 2); }, random_inputs({{5, 2}}));
  check([](const Inputs& x) { return x[0].select(1, 2); }, random_inputs({{3, 4}}));
}
TEST_CASE("gradcheck: expand") {
  check([](const Inputs& x) { return x[0].expand({4, 3, 2}) * 1.0; }, random_inputs({{3, 1}}));
}
TEST_CASE("gradcheck: squeeze, unsqueeze and flatten") {
  check([](const Inputs& x) { return x[0].squeeze().unsqueeze(0).flatten(); },
        random_inputs({{2, 1, 3}}));
  check([](const Inputs& x) { return x[0].squeeze(1); }, random_inputs({{2, 1, 3}}));
}
TEST_CASE("gradcheck: clone and to(dtype)") {
  check([](const Inputs& x) { return x[0].clone(); }, random_inputs({{3}}));
  check([](const Inputs& x) { return x[0].to(kFloat32).to(kFloat64); }, random_inputs({{3}}),
        {1e-3, 1e-4, 1e-3});
}

// --- Reductions ---
TEST_CASE("gradcheck: sum") {
  check([](const Inputs& x) { return sum(x[0]); }, random_inputs({{3, 4}}));
  check([](const Inputs& x) { return sum(x[0], {0, 2}); }, random_inputs({{2, 3, 4}}));
  check([](const Inputs& x) { return sum(x[0], {-1}, true); }, random_inputs({{2, 3}}));
}
TEST_CASE("gradcheck: mean") {
  check([](const Inputs& x) { return mean(x[0]); }, random_inputs({{3, 4}}));
  check([](const Inputs& x) { return mean(x[0], {1}, true); }, random_inputs({{2, 3, 4}}));
}
TEST_CASE("gradcheck: var") {
  check([](const Inputs& x) { return var(x[0], {1}); }, random_inputs({{3, 5}}));
  check([](const Inputs& x) { return var(x[0], {0, 2}, false, true); }, random_inputs({{2, 3, 4}}));
}
TEST_CASE("gradcheck: max and min (all)") {
  check([](const Inputs& x) { return max(x[0]); }, {spread({3, 4}, 12)});
  check([](const Inputs& x) { return min(x[0]); }, {spread({3, 4}, 13)});
}
TEST_CASE("gradcheck: max and min (dim)") {
  check([](const Inputs& x) { return max(x[0], 1).values; }, {spread({3, 4}, 14)});
  check([](const Inputs& x) { return min(x[0], 0, true).values; }, {spread({3, 4, 2}, 15)});
}
TEST_CASE("gradcheck: softmax") {
  check([](const Inputs& x) { return softmax(x[0], 1); }, random_inputs({{3, 5}}));
  check([](const Inputs& x) { return softmax(x[0], 0); }, random_inputs({{4, 2, 3}}));
}
TEST_CASE("gradcheck: log_softmax") {
  check([](const Inputs& x) { return log_softmax(x[0], -1); }, random_inputs({{3, 5}}));
  check([](const Inputs& x) { return log_softmax(x[0], 1); }, random_inputs({{2, 4, 3}}));
}

// --- Linear algebra ---
TEST_CASE("gradcheck: mm") {
  check([](const Inputs& x) { return mm(x[0], x[1]); }, random_inputs({{3, 4}, {4, 5}}));
  check([](const Inputs& x) { return mm(x[0].t(), x[1]); }, random_inputs({{4, 3}, {4, 2}}));
}
TEST_CASE("gradcheck: bmm") {
  check([](const Inputs& x) { return bmm(x[0], x[1]); }, random_inputs({{2, 3, 4}, {2, 4, 2}}));
}
TEST_CASE("gradcheck: matmul (vectors, broadcast batches)") {
  check([](const Inputs& x) { return matmul(x[0], x[1]); }, random_inputs({{4}, {4}}));
  check([](const Inputs& x) { return matmul(x[0], x[1]); }, random_inputs({{3}, {3, 2}}));
  check([](const Inputs& x) { return matmul(x[0], x[1]); }, random_inputs({{2, 3, 4}, {4}}));
  check([](const Inputs& x) { return matmul(x[0], x[1]); }, random_inputs({{2, 3, 4}, {4, 2}}));
  check([](const Inputs& x) { return matmul(x[0], x[1]); },
        random_inputs({{2, 1, 3, 4}, {3, 4, 2}}));
}
TEST_CASE("gradcheck: linear") {
  check([](const Inputs& x) { return linear(x[0], x[1], x[2]); },
        random_inputs({{5, 3}, {4, 3}, {4}}));
  check([](const Inputs& x) { return linear(x[0], x[1]); }, random_inputs({{2, 2, 3}, {4, 3}}));
}

// --- Convolution and pooling ---
TEST_CASE("gradcheck: conv2d") {
  check([](const Inputs& x) { return conv2d(x[0], x[1], x[2]); },
        random_inputs({{2, 3, 5, 5}, {4, 3, 3, 3}, {4}}));
}
TEST_CASE("gradcheck: conv2d with stride, padding and dilation") {
  check(
      [](const Inputs& x) {
        return conv2d(x[0], x[1], x[2], {2, 1}, {1, 2}, {2, 1});
      },
      random_inputs({{1, 2, 7, 6}, {3, 2, 3, 2}, {3}}));
}
TEST_CASE("gradcheck: conv2d grouped") {
  check(
      [](const Inputs& x) {
        return conv2d(x[0], x[1], {}, {1, 1}, {1, 1}, {1, 1}, 2);
      },
      random_inputs({{2, 4, 4, 4}, {6, 2, 3, 3}}));
}
TEST_CASE("gradcheck: conv2d depthwise") {
  check(
      [](const Inputs& x) {
        return conv2d(x[0], x[1], x[2], {2, 2}, {1, 1}, {1, 1}, 3);
      },
      random_inputs({{2, 3, 6, 5}, {3, 1, 3, 3}, {3}}));
}
TEST_CASE("gradcheck: conv2d pointwise (1x1)") {
  check([](const Inputs& x) { return conv2d(x[0], x[1], x[2]); },
        random_inputs({{2, 3, 4, 4}, {5, 3, 1, 1}, {5}}));
}
TEST_CASE("gradcheck: max_pool2d") {
  check([](const Inputs& x) { return max_pool2d(x[0], {2, 2}); }, {spread({2, 2, 4, 4}, 16)});
  check(
      [](const Inputs& x) {
        return max_pool2d(x[0], {3, 3}, Int2{2, 2}, {1, 1}, {1, 1}, true);
      },
      {spread({1, 2, 5, 6}, 17)});
}
TEST_CASE("gradcheck: avg_pool2d") {
  check([](const Inputs& x) { return avg_pool2d(x[0], {2, 2}); }, random_inputs({{2, 2, 4, 4}}));
  check(
      [](const Inputs& x) {
        return avg_pool2d(x[0], {3, 3}, Int2{2, 2}, {1, 1}, true, false);
      },
      random_inputs({{1, 2, 5, 6}}));
}
TEST_CASE("gradcheck: adaptive_avg_pool2d") {
  check(
      [](const Inputs& x) {
        return adaptive_avg_pool2d(x[0], {1, 1});
      },
      random_inputs({{2, 3, 4, 4}}));
  check(
      [](const Inputs& x) {
        return adaptive_avg_pool2d(x[0], {3, 2});
      },
      random_inputs({{1, 2, 5, 7}}));
}

// --- Normalisation, dropout, losses ---
TEST_CASE("gradcheck: batch_norm (training)") {
  check([](const Inputs& x) { return batch_norm(x[0], x[1], x[2], {}, {}, true); },
        random_inputs({{4, 3, 2, 2}, {3}, {3}}));
  check([](const Inputs& x) { return batch_norm(x[0], {}, {}, {}, {}, true); },
        random_inputs({{5, 2}}));
}
TEST_CASE("gradcheck: batch_norm_relu (training and evaluation)") {
  check([](const Inputs& x) { return batch_norm_relu(x[0], x[1], x[2], {}, {}, true); },
        random_inputs({{4, 3, 2, 2}, {3}, {3}}));
  const Tensor rm = tensor({0.1, -0.2, 0.3}, kFloat64), rv = tensor({1.5, 0.5, 2.0}, kFloat64);
  check([rm, rv](const Inputs& x) { return batch_norm_relu(x[0], x[1], x[2], rm, rv, false); },
        random_inputs({{4, 3, 2, 2}, {3}, {3}}));
}
TEST_CASE("gradcheck: batch_norm (evaluation)") {
  const Tensor rm = tensor({0.1, -0.2, 0.3}, kFloat64), rv = tensor({1.5, 0.5, 2.0}, kFloat64);
  check([rm, rv](const Inputs& x) { return batch_norm(x[0], x[1], x[2], rm, rv, false); },
        random_inputs({{4, 3, 2, 2}, {3}, {3}}));
}
TEST_CASE("gradcheck: dropout") {
  check(
      [](const Inputs& x) {
        Generator g(7);
        return dropout(x[0], 0.4, true, &g);
      },
      random_inputs({{4, 5}}));
}
TEST_CASE("gradcheck: cross_entropy") {
  const Tensor target = tensor(std::vector<std::int64_t>{2, 0, 1, 2});
  check([target](const Inputs& x) { return cross_entropy(x[0], target); }, random_inputs({{4, 3}}));
  LossOptions sum_weighted{tensor({0.5, 2.0, 1.0}, kFloat64), kSum, 0};
  check(
      [target, sum_weighted](const Inputs& x) { return cross_entropy(x[0], target, sum_weighted); },
      random_inputs({{4, 3}}));
  check(
      [target](const Inputs& x) {
        return cross_entropy(x[0], target, {{}, kNone, -100});
      },
      random_inputs({{4, 3}}));
}
TEST_CASE("gradcheck: nll_loss") {
  const Tensor target = tensor(std::vector<std::int64_t>{1, 0, 2});
  check([target](const Inputs& x) { return nll_loss(log_softmax(x[0], 1), target); },
        random_inputs({{3, 3}}));
  check(
      [target](const Inputs& x) {
        return nll_loss(x[0], target, {tensor({1.0, 3.0, 0.5}, kFloat64), kMean, -100});
      },
      random_inputs({{3, 3}}));
}

// --- A composite: a small CNN end to end ---
TEST_CASE("gradcheck: conv-bn-relu-pool-linear-cross_entropy chain") {
  const Tensor target = tensor(std::vector<std::int64_t>{1, 0});
  check(
      [target](const Inputs& x) {
        Tensor h = conv2d(x[0], x[1], x[2], {1, 1}, {1, 1});
        h = relu(batch_norm(h, {}, {}, {}, {}, true));
        h = max_pool2d(h, {2, 2}).flatten(1);
        return cross_entropy(linear(h, x[3]), target);
      },
      random_inputs({{2, 1, 4, 4}, {2, 1, 3, 3}, {2}, {2, 8}}), {1e-6, 1e-5, 1e-3});
}
