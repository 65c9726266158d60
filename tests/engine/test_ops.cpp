// Forward values of the ops through the engine (the kernels have their own tests against
// naive references): broadcasting, strided inputs, reductions over dims, matmul shapes,
// convolution and pooling wiring, batch-norm statistics, dropout, losses.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/frugal.h"

using namespace frugal;
using Catch::Matchers::Contains;

namespace {
double at(const Tensor& t, std::int64_t i) {
  return t.to(kFloat64).contiguous().data_ptr<double>()[i];
}
bool all_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  if (a.sizes() != b.sizes()) return false;
  const Tensor d = abs(sub(a.to(kFloat64), b.to(kFloat64)));
  return d.numel() == 0 || d.max().item<double>() <= tol;
}
}  // namespace

TEST_CASE("elementwise: broadcasting and strided operands") {
  Tensor a = arange(6, kFloat32).view({2, 3});
  Tensor b = tensor({10.0f, 20.0f, 30.0f});
  Tensor s = a + b;
  CHECK(s.sizes() == IntArrayRef{2, 3});
  CHECK(at(s, 4) == 24);
  Tensor t = a.t() * 2.0;  // strided input
  CHECK(t.sizes() == IntArrayRef{3, 2});
  CHECK(at(t, 1) == 6);
  CHECK(at(pow(a, 2), 5) == 25);
  CHECK(at(clamp(a, 1, 3), 0) == 1);
  CHECK(at(clamp(a, 1, 3), 5) == 3);
  CHECK(at(where(a > 2.5, a, neg(a)), 1) == -1);
  CHECK(at(where(a > 2.5, a, neg(a)), 4) == 4);
  CHECK(ge(a, 3).sum().item<std::int64_t>() == 3);
  CHECK(at(gelu(tensor({1.0}, kFloat64)), 0) == Approx(0.8413447460685429));
  CHECK(at(sigmoid(tensor({0.0f})), 0) == 0.5);
}

TEST_CASE("reductions over dims, keepdim, and index reductions") {
  Tensor a = arange(24, kFloat32).view({2, 3, 4});
  CHECK(a.sum().item<float>() == 276);
  CHECK(sum(a, {1}).sizes() == IntArrayRef{2, 4});
  CHECK(sum(a, {0, 2}, true).sizes() == IntArrayRef{1, 3, 1});
  CHECK(at(sum(a, {0, 2}), 1) == (4 + 5 + 6 + 7) + (16 + 17 + 18 + 19));
  CHECK(at(mean(a, {2}), 0) == 1.5);
  CHECK(at(var(a, {2}), 0) == Approx(5.0 / 3.0));
  CHECK(at(var(a, {2}, false), 0) == Approx(1.25));
  auto [values, indices] = max(a, 1);
  CHECK(at(values, 0) == 8);
  CHECK(indices.dtype() == kInt64);
  CHECK(indices[0][0].item<std::int64_t>() == 2);
  CHECK(argmax(a.transpose(1, 2), 2)[1][3].item<std::int64_t>() == 2);
  CHECK(argmin(a, 0)[2][3].item<std::int64_t>() == 0);
  CHECK(sum(ones({3}, kBool)).dtype() == kInt64);
  Tensor sm = softmax(a, 2);
  CHECK(at(sum(sm, {2}), 5) == Approx(1.0));
  CHECK(all_close(log_softmax(a, 1), log(softmax(a, 1))));
}

TEST_CASE("matmul shapes and linear") {
  Generator gen(1);
  Tensor a = randn({2, 3, 4}, {}, &gen), b = randn({4, 5}, {}, &gen);
  CHECK(matmul(a, b).sizes() == IntArrayRef{2, 3, 5});
  CHECK(matmul(a, randn({2, 4, 5}, {}, &gen)).sizes() == IntArrayRef{2, 3, 5});
  CHECK(matmul(randn({7, 1, 3, 4}, {}, &gen), randn({2, 4, 6}, {}, &gen)).sizes() ==
        IntArrayRef{7, 2, 3, 6});
  CHECK(matmul(randn({4}, {}, &gen), randn({4}, {}, &gen)).dim() == 0);
  // mm on a transposed view equals mm on its contiguous copy.
  Tensor m = randn({5, 3}, {}, &gen);
  CHECK(all_close(mm(m.t(), m), mm(m.t().contiguous(), m)));
  // matmul agrees with an explicit sum of products.
  Tensor prod = matmul(a, b);
  double expect = 0;
  for (int k = 0; k < 4; ++k) expect += at(a, 1 * 12 + 2 * 4 + k) * at(b, k * 5 + 3);
  CHECK(at(prod, 1 * 15 + 2 * 5 + 3) == Approx(expect).margin(1e-5));
  Tensor w = randn({5, 4}, {}, &gen), bias = randn({5}, {}, &gen);
  CHECK(all_close(linear(a, w, bias), add(matmul(a, w.t()), bias)));
  CHECK_THROWS_WITH(linear(a, randn({5, 3}, {}, &gen)), Contains("linear"));
}

TEST_CASE("conv2d: 1x1 equals a channel matmul; depthwise equals per-channel convolutions") {
  Generator gen(2);
  Tensor x = randn({2, 3, 4, 5}, {}, &gen);
  Tensor w = randn({6, 3, 1, 1}, {}, &gen);
  Tensor y = conv2d(x, w);
  Tensor y_ref = matmul(w.view({6, 3}), x.view({2, 3, 20})).view({2, 6, 4, 5});
  CHECK(all_close(y, y_ref));
  Tensor wd = randn({3, 1, 3, 3}, {}, &gen);
  Tensor yd = conv2d(x, wd, {}, {1, 1}, {1, 1}, {1, 1}, 3);
  for (std::int64_t c = 0; c < 3; ++c) {
    Tensor xc = x.narrow(1, c, 1).contiguous();
    CHECK(all_close(yd.narrow(1, c, 1),
                    conv2d(xc, wd.narrow(0, c, 1).contiguous(), {}, {1, 1}, {1, 1})));
  }
  CHECK(conv2d(x, randn({4, 3, 3, 3}, {}, &gen), {}, {2, 2}, {1, 1}).sizes() ==
        IntArrayRef{2, 4, 2, 3});
}

TEST_CASE("pooling shapes and values") {
  Tensor x = arange(16, kFloat32).view({1, 1, 4, 4});
  Tensor mp = max_pool2d(x, {2, 2});
  CHECK(mp.sizes() == IntArrayRef{1, 1, 2, 2});
  CHECK(at(mp, 3) == 15);
  CHECK(at(avg_pool2d(x, {2, 2}), 0) == 2.5);
  CHECK(at(adaptive_avg_pool2d(x, {1, 1}), 0) == 7.5);
  CHECK(max_pool2d(x, {3, 3}, Int2{2, 2}, {1, 1}, {1, 1}, true).sizes() == IntArrayRef{1, 1, 3, 3});
}

TEST_CASE("batch_norm: batch statistics in training, running statistics in evaluation") {
  Generator gen(3);
  Tensor x = add(mul(randn({16, 2, 3, 3}, {}, &gen), 2.0), 5.0);
  Tensor rm = zeros({2}), rv = ones({2});
  Tensor y = batch_norm(x, {}, {}, rm, rv, true, 0.1, 1e-5);
  CHECK(std::abs(at(mean(y, {0, 2, 3}), 0)) < 1e-4);
  CHECK(at(var(y, {0, 2, 3}, false), 1) == Approx(1.0).epsilon(1e-3));
  const double batch_mean = at(mean(x, {0, 2, 3}), 0);
  CHECK(at(rm, 0) == Approx(0.1 * batch_mean));
  const double batch_var = at(var(x, {0, 2, 3}), 0);  // unbiased for the running estimate
  CHECK(at(rv, 0) == Approx(0.9 + 0.1 * batch_var));
  Tensor ye = batch_norm(x, {}, {}, rm, rv, false);
  CHECK(at(ye, 0) == Approx((at(x, 0) - at(rm, 0)) / std::sqrt(at(rv, 0) + 1e-5)).epsilon(1e-4));
  CHECK_THROWS_WITH(batch_norm(x, {}, {}, {}, {}, false), Contains("running"));
  // The fused form equals relu(batch_norm), in training (statistics moved the same way) and eval.
  Tensor rm2 = zeros({2}), rv2 = ones({2}), rm3 = zeros({2}), rv3 = ones({2});
  CHECK(all_close(batch_norm_relu(x, {}, {}, rm2, rv2, true),
                  relu(batch_norm(x, {}, {}, rm3, rv3, true))));
  CHECK(all_close(rm2, rm3));
  CHECK(all_close(batch_norm_relu(x, {}, {}, rm2, rv2, false),
                  relu(batch_norm(x, {}, {}, rm2, rv2, false))));
  CHECK_THROWS_WITH(batch_norm(x, ones({3}), {}, {}, {}, true), Contains("weight"));
}

TEST_CASE("dropout: keeps about 1 - p, scales by 1 / (1 - p), identity in evaluation") {
  Generator gen(4);
  Tensor x = ones({20000});
  Tensor y = dropout(x, 0.3, true, &gen);
  const double kept = at(sum(gt(y, 0)).to(kFloat64), 0) / 20000;
  CHECK(kept == Approx(0.7).margin(0.02));
  CHECK(at(max(y), 0) == Approx(1 / 0.7));
  CHECK(dropout(x, 0.3, false).is_alias_of(x));
  CHECK_THROWS_WITH(dropout(x, 1.5, true), Contains("dropout"));
}

TEST_CASE("cross_entropy equals nll_loss of log_softmax; ignore_index; reductions") {
  Generator gen(5);
  Tensor logits = randn({6, 4}, {}, &gen);
  Tensor target = tensor(std::vector<std::int64_t>{0, 3, 1, -100, 2, 2});
  Tensor ce = cross_entropy(logits, target);
  Tensor nll = nll_loss(log_softmax(logits, 1), target);
  CHECK(ce.dim() == 0);
  CHECK(at(ce, 0) == Approx(at(nll, 0)));
  Tensor none = cross_entropy(logits, target, {{}, kNone, -100});
  CHECK(none.sizes() == IntArrayRef{6});
  CHECK(at(none, 3) == 0);
  CHECK(at(cross_entropy(logits, target, {{}, kSum, -100}), 0) == Approx(at(ce, 0) * 5));
  CHECK_THROWS_WITH(cross_entropy(logits, tensor(std::vector<std::int64_t>{0, 1})),
                    Contains("target"));
}

TEST_CASE("float16 and bfloat16 tensors compute in float32 inside and match float32 results") {
  Generator gen(6);
  const Tensor x = randn({2, 3, 6, 6}, {}, &gen), w = mul(randn({4, 3, 3, 3}, {}, &gen), 0.2);
  const Tensor m = randn({8, 16}, {}, &gen), n = randn({16, 5}, {}, &gen);
  for (ScalarType t : {kFloat16, kBFloat16}) {
    const double tol = t == kFloat16 ? 2e-2 : 1.5e-1;
    INFO(dtype_name(t));
    CHECK(conv2d(x.to(t), w.to(t)).dtype() == t);
    CHECK(all_close(conv2d(x.to(t), w.to(t), {}, {1, 1}, {1, 1}), conv2d(x, w, {}, {1, 1}, {1, 1}),
                    tol));
    CHECK(all_close(mm(m.to(t), n.to(t)), mm(m, n), tol * 4));
    CHECK(all_close(softmax(m.to(t), 1), softmax(m, 1), tol / 4));
    CHECK(all_close(relu(m.to(t)) * 2.0, relu(m) * 2.0, tol));
    CHECK(all_close(sum(m.to(t), {1}), sum(m, {1}), tol * 4));
    CHECK(all_close(max_pool2d(x.to(t), {2, 2}), max_pool2d(x, {2, 2}), tol));
    // Batch norm on 16-bit data keeps float32 statistics, as mixed-precision layers do.
    Tensor rm = zeros({3}), rv = ones({3});
    CHECK(all_close(batch_norm(x.to(t), {}, {}, rm, rv, true), batch_norm(x, {}, {}, {}, {}, true),
                    tol * 2));
    // A 16-bit leaf gets a 16-bit gradient.
    Tensor leaf = m.to(t).requires_grad_();
    (leaf * leaf).sum().backward();
    CHECK(leaf.grad().dtype() == t);
    CHECK(all_close(leaf.grad(), m * 2.0, tol * 4));
  }
}

// ReLU's backward on 16-bit data compares the output's bits instead of widening them: the
// same result as the float path, bit for bit, at every kind of value (zeros of both signs,
// subnormals, infinities, NaN), across the 32-lane steps and on strided operands.
template <class T>
void check_relu_backward_bits(ScalarType t) {
  const float specials[] = {0.0f,     -0.0f,     1e-40f, -1e-40f, 1.0f,   -1.0f,
                            INFINITY, -INFINITY, NAN,    3e38f,   -3e38f, 0.5f};
  Generator gen(9);
  Tensor y = randn({7, 11}, {}, &gen).to(t).contiguous();
  for (std::int64_t i = 0; i < y.numel(); i += 2)
    y.data_ptr<T>()[i] = static_cast<T>(specials[(i / 2) % 12]);
  const Tensor g = randn({7, 11}, {}, &gen).to(t);
  auto bits_equal = [](const Tensor& a, const Tensor& b) {
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    for (std::int64_t i = 0; i < ac.numel(); ++i)
      if (ac.data_ptr<T>()[i].bits != bc.data_ptr<T>()[i].bits) return false;
    return true;
  };
  CHECK(bits_equal(relu_backward(g, y), relu_backward(g.to(kFloat32), y.to(kFloat32)).to(t)));
  const Tensor gt = g.t(), yt = y.t();  // strided runs
  CHECK(bits_equal(relu_backward(gt, yt), relu_backward(gt.to(kFloat32), yt.to(kFloat32)).to(t)));
}

TEST_CASE("relu_backward on 16-bit data equals the float path bit for bit") {
  check_relu_backward_bits<BFloat16>(kBFloat16);
  check_relu_backward_bits<Half>(kFloat16);
}
