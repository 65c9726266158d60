// Batch norm against naive per-channel loops: training and eval forward (NCHW and [n, c],
// with and without affine parameters), the running-statistics update, and both backward
// formulas against finite differences of the naive forward in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/parallel.h"

using namespace frugal;
using namespace frugal::kernels::cpu;

namespace {

struct Shape {
  std::int64_t n, c, hw;
  std::size_t numel() const { return static_cast<std::size_t>(n * c * hw); }
  std::size_t at(std::int64_t i, std::int64_t ch, std::int64_t e) const {
    return static_cast<std::size_t>((i * c + ch) * hw + e);
  }
};

std::vector<double> random_values(std::size_t n, std::mt19937& rng, double mean, double sd) {
  std::normal_distribution<double> g(mean, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

struct Stats {
  std::vector<double> mean, var;  // biased variance
};

Stats naive_stats(const std::vector<double>& x, Shape s) {
  Stats st{std::vector<double>(static_cast<std::size_t>(s.c)),
           std::vector<double>(static_cast<std::size_t>(s.c))};
  const double m = static_cast<double>(s.n * s.hw);
  for (std::int64_t ch = 0; ch < s.c; ++ch) {
    double sum = 0, sq = 0;
    for (std::int64_t i = 0; i < s.n; ++i)
      for (std::int64_t e = 0; e < s.hw; ++e) sum += x[s.at(i, ch, e)];
    const double mean = sum / m;
    for (std::int64_t i = 0; i < s.n; ++i)
      for (std::int64_t e = 0; e < s.hw; ++e)
        sq += (x[s.at(i, ch, e)] - mean) * (x[s.at(i, ch, e)] - mean);
    st.mean[static_cast<std::size_t>(ch)] = mean;
    st.var[static_cast<std::size_t>(ch)] = sq / m;
  }
  return st;
}

// y = (x - mean) / sqrt(var + eps) * w + b with the given (or the batch's) statistics.
std::vector<double> naive_forward(const std::vector<double>& x, Shape s, const double* w,
                                  const double* b, const Stats* fixed, double eps) {
  const Stats st = fixed ? *fixed : naive_stats(x, s);
  std::vector<double> y(x.size());
  for (std::int64_t ch = 0; ch < s.c; ++ch) {
    const std::size_t k = static_cast<std::size_t>(ch);
    const double invstd = 1 / std::sqrt(st.var[k] + eps);
    for (std::int64_t i = 0; i < s.n; ++i)
      for (std::int64_t e = 0; e < s.hw; ++e)
        y[s.at(i, ch, e)] =
            (x[s.at(i, ch, e)] - st.mean[k]) * invstd * (w ? w[k] : 1) + (b ? b[k] : 0);
  }
  return y;
}

template <class T>
void check_training_forward(Shape s, bool affine, std::mt19937& rng, double tol) {
  using P = compute_t<T>;
  const auto xd = random_values(s.numel(), rng, 3, 2);
  const std::vector<T> x(xd.begin(), xd.end());
  const std::vector<double> xs(x.begin(), x.end());
  const auto wd = random_values(static_cast<std::size_t>(s.c), rng, 1, 0.5);
  const auto bd = random_values(static_cast<std::size_t>(s.c), rng, 0, 1);
  const std::vector<P> w(wd.begin(), wd.end()), b(bd.begin(), bd.end());
  const std::vector<double> ws(w.begin(), w.end()), bs(b.begin(), b.end());
  std::vector<P> rm(static_cast<std::size_t>(s.c), P(0.5f)),
      rv(static_cast<std::size_t>(s.c), P(2.0f));
  std::vector<P> save_mean(rm.size()), save_invstd(rm.size());
  std::vector<T> y(x.size());
  const double eps = 1e-5, momentum = 0.1;
  batch_norm_forward_train(x.data(), affine ? w.data() : nullptr, affine ? b.data() : nullptr,
                           rm.data(), rv.data(), s.n, s.c, s.hw, momentum, eps, y.data(),
                           save_mean.data(), save_invstd.data());
  const auto ref = naive_forward(xs, s, affine ? ws.data() : nullptr, affine ? bs.data() : nullptr,
                                 nullptr, eps);
  for (std::size_t i = 0; i < y.size(); ++i)
    REQUIRE(static_cast<double>(y[i]) == Approx(ref[i]).margin(tol).epsilon(tol));
  const Stats st = naive_stats(xs, s);
  const double m = static_cast<double>(s.n * s.hw);
  for (std::size_t ch = 0; ch < rm.size(); ++ch) {
    CHECK(static_cast<double>(save_mean[ch]) == Approx(st.mean[ch]).epsilon(tol));
    CHECK(static_cast<double>(save_invstd[ch]) ==
          Approx(1 / std::sqrt(st.var[ch] + eps)).epsilon(tol));
    CHECK(static_cast<double>(rm[ch]) == Approx(0.9 * 0.5 + 0.1 * st.mean[ch]).epsilon(tol));
    CHECK(static_cast<double>(rv[ch]) ==
          Approx(0.9 * 2.0 + 0.1 * st.var[ch] * m / (m - 1)).epsilon(tol));
  }
  // Eval mode with the updated running statistics.
  std::vector<T> ye(x.size());
  batch_norm_forward_eval(x.data(), affine ? w.data() : nullptr, affine ? b.data() : nullptr,
                          rm.data(), rv.data(), s.n, s.c, s.hw, eps, ye.data());
  const Stats running{std::vector<double>(rm.begin(), rm.end()),
                      std::vector<double>(rv.begin(), rv.end())};
  const auto ref_eval = naive_forward(xs, s, affine ? ws.data() : nullptr,
                                      affine ? bs.data() : nullptr, &running, eps);
  for (std::size_t i = 0; i < ye.size(); ++i)
    REQUIRE(static_cast<double>(ye[i]) == Approx(ref_eval[i]).margin(tol).epsilon(tol));
}

const Shape kShapes[] = {{4, 3, 25}, {2, 5, 7}, {37, 70, 1}, {3, 2, 1}, {16, 8, 900}};

}  // namespace

TEST_CASE("batch_norm forward matches the naive reference and updates running stats",
          "[batch_norm]") {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::mt19937 rng(1);
    for (const Shape& s : kShapes)
      for (bool affine : {false, true}) {
        INFO("threads " << threads << " shape " << s.n << "x" << s.c << "x" << s.hw << " affine "
                        << affine);
        check_training_forward<double>(s, affine, rng, 1e-11);
        check_training_forward<float>(s, affine, rng, 2e-5);
      }
  }
  set_num_threads(2);
}

TEST_CASE("16-bit batch_norm keeps float parameters and statistics", "[batch_norm]") {
  std::mt19937 rng(2);
  check_training_forward<Half>({4, 3, 20}, true, rng, 1e-2);
  check_training_forward<BFloat16>({5, 66, 1}, true, rng, 5e-2);
}

TEST_CASE("batch_norm backward matches finite differences", "[batch_norm]") {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::mt19937 rng(3);
    for (Shape s : {Shape{3, 2, 5}, Shape{6, 3, 1}}) {
      const auto x = random_values(s.numel(), rng, 1, 2);
      const auto gy = random_values(s.numel(), rng, 0, 1);
      const auto w = random_values(static_cast<std::size_t>(s.c), rng, 1, 0.5);
      const auto b = random_values(static_cast<std::size_t>(s.c), rng, 0, 1);
      const Stats running{random_values(static_cast<std::size_t>(s.c), rng, 0, 1),
                          random_values(static_cast<std::size_t>(s.c), rng, 2, 0.3)};
      const double eps = 1e-5;
      for (bool training : {true, false}) {
        INFO("training " << training << " hw " << s.hw);
        const Stats* fixed = training ? nullptr : &running;
        auto loss = [&](const std::vector<double>& xv, const std::vector<double>& wv,
                        const std::vector<double>& bv) {
          const auto y = naive_forward(xv, s, wv.data(), bv.data(), fixed, eps);
          double l = 0;
          for (std::size_t i = 0; i < y.size(); ++i) l += gy[i] * y[i];
          return l;
        };
        std::vector<double> gx(x.size()), gw(w.size()), gb(b.size());
        if (training) {
          std::vector<double> y(x.size()), mean(w.size()), invstd(w.size());
          batch_norm_forward_train(x.data(), w.data(), b.data(), nullptr, nullptr, s.n, s.c, s.hw,
                                   0.1, eps, y.data(), mean.data(), invstd.data());
          batch_norm_backward_train(gy.data(), x.data(), w.data(), mean.data(), invstd.data(), s.n,
                                    s.c, s.hw, gx.data(), gw.data(), gb.data());
          // Each output alone gives the same values.
          std::vector<double> gx_only(x.size()), gw_only(w.size());
          batch_norm_backward_train(gy.data(), x.data(), w.data(), mean.data(), invstd.data(), s.n,
                                    s.c, s.hw, gx_only.data(), static_cast<double*>(nullptr),
                                    nullptr);
          batch_norm_backward_train(gy.data(), x.data(), w.data(), mean.data(), invstd.data(), s.n,
                                    s.c, s.hw, static_cast<double*>(nullptr), gw_only.data(),
                                    nullptr);
          CHECK(gx_only == gx);
          CHECK(gw_only == gw);
        } else {
          batch_norm_backward_eval(gy.data(), x.data(), w.data(), running.mean.data(),
                                   running.var.data(), eps, s.n, s.c, s.hw, gx.data(), gw.data(),
                                   gb.data());
        }
        const double h = 1e-6;
        for (std::size_t i = 0; i < x.size(); ++i) {
          std::vector<double> xv = x;
          const double orig = xv[i];
          xv[i] = orig + h;
          const double up = loss(xv, w, b);
          xv[i] = orig - h;
          const double down = loss(xv, w, b);
          CHECK(gx[i] == Approx((up - down) / (2 * h)).margin(1e-6));
        }
        for (std::size_t ch = 0; ch < w.size(); ++ch) {
          std::vector<double> wv = w, bv = b;
          wv[ch] += h;
          const double wu = loss(x, wv, b);
          wv[ch] -= 2 * h;
          const double wd = loss(x, wv, b);
          bv[ch] += h;
          const double bu = loss(x, w, bv);
          bv[ch] -= 2 * h;
          const double bd = loss(x, w, bv);
          CHECK(gw[ch] == Approx((wu - wd) / (2 * h)).margin(1e-6));
          CHECK(gb[ch] == Approx((bu - bd) / (2 * h)).margin(1e-6));
        }
      }
    }
  }
  set_num_threads(2);
}

TEST_CASE("batch_norm float backward on a training-sized problem agrees with double",
          "[batch_norm]") {
  std::mt19937 rng(4);
  const Shape s{16, 8, 196};
  const auto x = random_values(s.numel(), rng, 0.5, 1);
  const auto gy = random_values(s.numel(), rng, 0, 1);
  const auto w = random_values(8, rng, 1, 0.3);
  std::vector<double> y(x.size()), mean(8), invstd(8), gx(x.size()), gw(8), gb(8);
  batch_norm_forward_train(x.data(), w.data(), static_cast<const double*>(nullptr), nullptr,
                           nullptr, s.n, s.c, s.hw, 0.1, 1e-5, y.data(), mean.data(),
                           invstd.data());
  batch_norm_backward_train(gy.data(), x.data(), w.data(), mean.data(), invstd.data(), s.n, s.c,
                            s.hw, gx.data(), gw.data(), gb.data());
  const std::vector<float> xf(x.begin(), x.end()), gyf(gy.begin(), gy.end()),
      wf(w.begin(), w.end());
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::vector<float> yf(x.size()), meanf(8), invstdf(8), gxf(x.size()), gwf(8), gbf(8);
    batch_norm_forward_train(xf.data(), wf.data(), static_cast<const float*>(nullptr), nullptr,
                             nullptr, s.n, s.c, s.hw, 0.1, 1e-5, yf.data(), meanf.data(),
                             invstdf.data());
    batch_norm_backward_train(gyf.data(), xf.data(), wf.data(), meanf.data(), invstdf.data(), s.n,
                              s.c, s.hw, gxf.data(), gwf.data(), gbf.data());
    for (std::size_t i = 0; i < gx.size(); ++i) REQUIRE(gxf[i] == Approx(gx[i]).margin(2e-5));
    for (std::size_t ch = 0; ch < 8; ++ch) {
      CHECK(gwf[ch] == Approx(gw[ch]).epsilon(1e-4));
      CHECK(gbf[ch] == Approx(gb[ch]).epsilon(1e-4));
    }
  }
  set_num_threads(2);
}

// 16-bit data is widened to float in runs (several here: 2100 values per plane) and the
// float path computes on it, so the results are the float kernel's on the widened inputs,
// rounded once: bit for bit, forward (with and without the fused ReLU) and backward.
template <class T>
void check_16bit_equals_float(bool relu) {
  std::mt19937 rng(17);
  const Shape s{3, 4, 2100};
  std::vector<T> x(static_cast<std::size_t>(s.numel())), gy(x.size());
  for (const auto& [dst, mean] : {std::pair{&x, 0.5}, std::pair{&gy, 0.0}}) {
    const auto v = random_values(s.numel(), rng, mean, 1);
    for (std::size_t i = 0; i < v.size(); ++i) (*dst)[i] = static_cast<T>(static_cast<float>(v[i]));
  }
  const std::vector<float> w = {0.5f, 1.5f, -1.0f, 2.0f}, b = {0.1f, -0.2f, 0.3f, 0.0f};
  const std::vector<float> xf(x.begin(), x.end()), gyf(gy.begin(), gy.end());
  std::vector<float> yf(x.size()), mf(4), isf(4), gxf(x.size()), gwf(4), gbf(4);
  batch_norm_forward_train(xf.data(), w.data(), b.data(), nullptr, nullptr, s.n, s.c, s.hw, 0.1,
                           1e-5, yf.data(), mf.data(), isf.data(), relu);
  batch_norm_backward_train(gyf.data(), xf.data(), w.data(), mf.data(), isf.data(), s.n, s.c, s.hw,
                            gxf.data(), gwf.data(), gbf.data());
  std::vector<T> y(x.size()), gx(x.size());
  std::vector<float> m(4), is(4), gw(4), gb(4);
  batch_norm_forward_train(x.data(), w.data(), b.data(), nullptr, nullptr, s.n, s.c, s.hw, 0.1,
                           1e-5, y.data(), m.data(), is.data(), relu);
  batch_norm_backward_train(gy.data(), x.data(), w.data(), m.data(), is.data(), s.n, s.c, s.hw,
                            gx.data(), gw.data(), gb.data());
  CHECK(m == mf);
  CHECK(is == isf);
  CHECK(gw == gwf);
  CHECK(gb == gbf);
  for (std::size_t i = 0; i < x.size(); ++i) {
    REQUIRE(static_cast<T>(yf[i]).bits == y[i].bits);
    REQUIRE(static_cast<T>(gxf[i]).bits == gx[i].bits);
  }
}

TEST_CASE("16-bit batch_norm computes exactly the float path on the widened data", "[batch_norm]") {
  for (bool relu : {false, true}) {
    check_16bit_equals_float<Half>(relu);
    check_16bit_equals_float<BFloat16>(relu);
  }
}

TEST_CASE("batch_norm training needs more than one value per channel", "[batch_norm]") {
  const float x[3] = {1, 2, 3};
  float y[3], m[3], s[3];
  CHECK_THROWS_AS(
      batch_norm_forward_train(x, static_cast<const float*>(nullptr),
                               static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
                               static_cast<float*>(nullptr), 1, 3, 1, 0.1, 1e-5, y, m, s),
      frugal::Error);
  const float rm[3] = {0, 0, 0}, rv[3] = {1, 1, 1};
  batch_norm_forward_eval(x, static_cast<const float*>(nullptr), static_cast<const float*>(nullptr),
                          rm, rv, 1, 3, 1, 0.0, y);
  CHECK(y[2] == 3.0f);
}

TEST_CASE("batch_norm with the ReLU fused equals max(0, batch_norm), NaN kept", "[batch_norm]") {
  const std::int64_t n = 6, c = 3, hw = 10;
  std::mt19937 rng(77);
  std::normal_distribution<float> dist(0.5f, 2.0f);
  std::vector<float> x(static_cast<std::size_t>(n * c * hw));
  for (auto& v : x) v = dist(rng);
  const std::vector<float> weight = {1.5f, -0.5f, 1.0f}, bias = {0.1f, 0.2f, -0.3f};
  std::vector<float> rm1(3, 0.f), rv1(3, 1.f), rm2 = rm1, rv2 = rv1;
  std::vector<float> y(x.size()), y_fused(x.size()), m(3), s(3), m2(3), s2(3);
  batch_norm_forward_train<float>(x.data(), weight.data(), bias.data(), rm1.data(), rv1.data(), n,
                                  c, hw, 0.1, 1e-5, y.data(), m.data(), s.data());
  batch_norm_forward_train<float>(x.data(), weight.data(), bias.data(), rm2.data(), rv2.data(), n,
                                  c, hw, 0.1, 1e-5, y_fused.data(), m2.data(), s2.data(),
                                  /*relu=*/true);
  for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y_fused[i] == std::max(0.0f, y[i]));
  REQUIRE(rm1 == rm2);
  REQUIRE(rv1 == rv2);
  REQUIRE(m == m2);
  x[4] = std::numeric_limits<float>::quiet_NaN();
  batch_norm_forward_eval<float>(x.data(), weight.data(), bias.data(), rm1.data(), rv1.data(), n, c,
                                 hw, 1e-5, y.data());
  batch_norm_forward_eval<float>(x.data(), weight.data(), bias.data(), rm1.data(), rv1.data(), n, c,
                                 hw, 1e-5, y_fused.data(), /*relu=*/true);
  REQUIRE(std::isnan(y_fused[4]));
  for (std::size_t i = 0; i < y.size(); ++i)
    if (i != 4) REQUIRE(y_fused[i] == std::max(0.0f, y[i]));
}
