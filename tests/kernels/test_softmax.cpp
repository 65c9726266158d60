// Softmax and log-softmax against naive double loops over [outer, dim, inner] (rows, column
// blocks, long rows), in place, with extreme values, and both backward formulas against
// finite differences of the naive forward.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/softmax.h"

using namespace frugal;
using namespace frugal::kernels::cpu;

namespace {

struct Dims {
  std::int64_t outer, dim, inner;
  std::int64_t numel() const { return outer * dim * inner; }
};

std::vector<double> naive(const std::vector<double>& x, Dims d, bool log) {
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < d.outer; ++o)
    for (std::int64_t j = 0; j < d.inner; ++j) {
      auto at = [&](std::int64_t k) {
        return static_cast<std::size_t>((o * d.dim + k) * d.inner + j);
      };
      double m = -INFINITY, s = 0;
      for (std::int64_t k = 0; k < d.dim; ++k) m = std::max(m, x[at(k)]);
      for (std::int64_t k = 0; k < d.dim; ++k) s += std::exp(x[at(k)] - m);
      for (std::int64_t k = 0; k < d.dim; ++k)
        y[at(k)] = log ? x[at(k)] - m - std::log(s) : std::exp(x[at(k)] - m) / s;
    }
  return y;
}

std::vector<double> random_values(std::int64_t n, std::mt19937& rng, double scale) {
  std::normal_distribution<double> g(0, scale);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = g(rng);
  return v;
}

template <class T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
void check_forward(Dims d, std::mt19937& rng, double tol) {
  const auto xd = random_values(d.numel(), rng, 3);
  const auto x = cast<T>(xd);
  std::vector<double> xr(x.begin(), x.end());  // the values the kernel actually sees
  for (bool log : {false, true}) {
    const auto ref = naive(xr, d, log);
    std::vector<T> y(x.size()), inplace = x;
    if (log) {
      log_softmax(x.data(), y.data(), d.outer, d.dim, d.inner);
      log_softmax(inplace.data(), inplace.data(), d.outer, d.dim, d.inner);
    } else {
      softmax(x.data(), y.data(), d.outer, d.dim, d.inner);
      softmax(inplace.data(), inplace.data(), d.outer, d.dim, d.inner);
    }
    for (std::size_t i = 0; i < y.size(); ++i) {
      REQUIRE(static_cast<double>(y[i]) == Approx(ref[i]).margin(tol).epsilon(tol));
      REQUIRE(static_cast<double>(inplace[i]) == static_cast<double>(y[i]));
    }
  }
}

const Dims kShapes[] = {{3, 17, 1}, {4, 300, 1},   {2, 9, 70},  {1, 5, 3},
                        {3, 1, 4},  {256, 300, 1}, {6, 40, 200}};

}  // namespace

TEST_CASE("softmax and log_softmax match the naive reference", "[softmax]") {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::mt19937 rng(1);
    for (const Dims& d : kShapes) {
      INFO("threads " << threads << " shape " << d.outer << "x" << d.dim << "x" << d.inner);
      check_forward<double>(d, rng, 1e-12);
      check_forward<float>(d, rng, 2e-6);
    }
  }
  set_num_threads(2);
}

TEST_CASE("16-bit softmax computes in float", "[softmax]") {
  std::mt19937 rng(2);
  check_forward<Half>({4, 33, 1}, rng, 4e-3);
  check_forward<BFloat16>({2, 12, 5}, rng, 3e-2);
}

TEST_CASE("softmax is stable for large values and propagates NaN", "[softmax]") {
  const float inf = std::numeric_limits<float>::infinity();
  float x[8] = {1000, 1001, 999, -inf, 5, 6, std::numeric_limits<float>::quiet_NaN(), 7};
  float y[8], ly[8];
  softmax(x, y, 2, 4, 1);
  log_softmax(x, ly, 2, 4, 1);
  const double s = std::exp(-1.0) + 1 + std::exp(-2.0);
  CHECK(y[1] == Approx(1 / s));
  CHECK(y[3] == 0.0f);
  CHECK(ly[3] == -inf);
  CHECK(ly[0] == Approx(-1 - std::log(s)));
  for (int i = 4; i < 8; ++i) {
    CHECK(std::isnan(y[i]));
    CHECK(std::isnan(ly[i]));
  }
}

TEST_CASE("softmax backward formulas match finite differences", "[softmax]") {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::mt19937 rng(3);
    for (Dims d : {Dims{2, 7, 1}, Dims{2, 5, 3}, Dims{1, 4, 70}}) {
      const auto x = random_values(d.numel(), rng, 1.5);
      const auto gy = random_values(d.numel(), rng, 1);
      for (bool log : {false, true}) {
        INFO("log " << log << " inner " << d.inner);
        std::vector<double> y(x.size()), gx(x.size()), gx_alias = gy;
        if (log) {
          log_softmax(x.data(), y.data(), d.outer, d.dim, d.inner);
          log_softmax_backward(y.data(), gy.data(), gx.data(), d.outer, d.dim, d.inner);
          log_softmax_backward(y.data(), gx_alias.data(), gx_alias.data(), d.outer, d.dim, d.inner);
        } else {
          softmax(x.data(), y.data(), d.outer, d.dim, d.inner);
          softmax_backward(y.data(), gy.data(), gx.data(), d.outer, d.dim, d.inner);
          softmax_backward(y.data(), gx_alias.data(), gx_alias.data(), d.outer, d.dim, d.inner);
        }
        auto loss = [&](const std::vector<double>& at) {
          const auto f = naive(at, d, log);
          double l = 0;
          for (std::size_t i = 0; i < f.size(); ++i) l += gy[i] * f[i];
          return l;
        };
        const double h = 1e-6;
        for (std::size_t i = 0; i < x.size(); ++i) {
          auto xp = x, xm = x;
          xp[i] += h;
          xm[i] -= h;
          const double fd = (loss(xp) - loss(xm)) / (2 * h);
          CHECK(gx[i] == Approx(fd).margin(1e-7));
          CHECK(gx_alias[i] == gx[i]);
        }
      }
    }
  }
  set_num_threads(2);
}

TEST_CASE("float softmax backward matches double on a parallel-sized problem", "[softmax]") {
  std::mt19937 rng(4);
  const Dims d{128, 500, 1};
  const auto x = random_values(d.numel(), rng, 2);
  const auto gy = random_values(d.numel(), rng, 1);
  std::vector<double> y(x.size()), gx(x.size());
  softmax(x.data(), y.data(), d.outer, d.dim, d.inner);
  softmax_backward(y.data(), gy.data(), gx.data(), d.outer, d.dim, d.inner);
  const auto yf = cast<float>(y), gyf = cast<float>(gy);
  std::vector<float> gxf(x.size());
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    softmax_backward(yf.data(), gyf.data(), gxf.data(), d.outer, d.dim, d.inner);
    for (std::size_t i = 0; i < gx.size(); ++i) REQUIRE(gxf[i] == Approx(gx[i]).margin(1e-6));
    std::vector<double> lgx(x.size()), ly(x.size());
    log_softmax(x.data(), ly.data(), d.outer, d.dim, d.inner);
    log_softmax_backward(ly.data(), gy.data(), lgx.data(), d.outer, d.dim, d.inner);
    const auto lyf = cast<float>(ly);
    std::vector<float> lgxf(x.size());
    log_softmax_backward(lyf.data(), gyf.data(), lgxf.data(), d.outer, d.dim, d.inner);
    for (std::size_t i = 0; i < gx.size(); ++i) REQUIRE(lgxf[i] == Approx(lgx[i]).margin(1e-5));
  }
  set_num_threads(2);
}
