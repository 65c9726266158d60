// nll_loss and the fused cross-entropy against naive loops: every reduction, class weights,
// ignore_index, bad targets, both ways of saving for the backward, and gradients against
// finite differences of the naive forward in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/parallel.h"

using namespace frugal;
using namespace frugal::kernels::cpu;

namespace {

struct Problem {
  std::int64_t n, c;
  std::vector<double> x;             // [n, c]
  std::vector<std::int64_t> target;  // [n], some ignored
  std::vector<double> weight;        // [c]
};

Problem make_problem(std::int64_t n, std::int64_t c, std::int64_t ignore_index, std::mt19937& rng) {
  Problem p{n, c, {}, {}, {}};
  std::normal_distribution<double> g(0, 2);
  std::uniform_real_distribution<double> u(0.2, 2.0);
  for (std::int64_t i = 0; i < n * c; ++i) p.x.push_back(g(rng));
  for (std::int64_t i = 0; i < n; ++i)
    p.target.push_back(i % 5 == 3 ? ignore_index : static_cast<std::int64_t>(rng() % c));
  for (std::int64_t j = 0; j < c; ++j) p.weight.push_back(u(rng));
  return p;
}

std::vector<double> naive_log_softmax(const std::vector<double>& x, std::int64_t n,
                                      std::int64_t c) {
  std::vector<double> y(x.size());
  for (std::int64_t i = 0; i < n; ++i) {
    double m = -INFINITY, s = 0;
    for (std::int64_t j = 0; j < c; ++j) m = std::max(m, x[static_cast<std::size_t>(i * c + j)]);
    for (std::int64_t j = 0; j < c; ++j) s += std::exp(x[static_cast<std::size_t>(i * c + j)] - m);
    for (std::int64_t j = 0; j < c; ++j)
      y[static_cast<std::size_t>(i * c + j)] =
          x[static_cast<std::size_t>(i * c + j)] - m - std::log(s);
  }
  return y;
}

// Returns the per-row losses (None) or the single reduced value.
std::vector<double> naive_nll(const std::vector<double>& lp, const Problem& p, bool weighted,
                              Reduction r, std::int64_t ignore_index) {
  std::vector<double> rows(static_cast<std::size_t>(p.n), 0.0);
  double total = 0, wsum = 0;
  for (std::int64_t i = 0; i < p.n; ++i) {
    const std::int64_t t = p.target[static_cast<std::size_t>(i)];
    if (t == ignore_index) continue;
    const double w = weighted ? p.weight[static_cast<std::size_t>(t)] : 1.0;
    rows[static_cast<std::size_t>(i)] = -w * lp[static_cast<std::size_t>(i * p.c + t)];
    total += rows[static_cast<std::size_t>(i)];
    wsum += w;
  }
  if (r == Reduction::None) return rows;
  return {r == Reduction::Sum ? total : total / wsum};
}

const Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

template <class T>
void check_forward(const Problem& p, bool weighted, std::int64_t ignore_index, double tol) {
  const std::vector<T> x(p.x.begin(), p.x.end()), w(p.weight.begin(), p.weight.end());
  const std::vector<double> xs(x.begin(), x.end());  // what the kernel sees
  const auto lp = naive_log_softmax(xs, p.n, p.c);
  const std::vector<T> lpt(lp.begin(), lp.end());
  const std::vector<double> lps(lpt.begin(), lpt.end());
  for (Reduction r : kReductions) {
    INFO("reduction " << static_cast<int>(r) << " weighted " << weighted);
    std::vector<T> nll_out(static_cast<std::size_t>(p.n)), ce_out(static_cast<std::size_t>(p.n));
    std::vector<T> log_probs(x.size()), lse(static_cast<std::size_t>(p.n));
    T nll_tw, ce_tw;
    const T* wp = weighted ? w.data() : nullptr;
    nll_loss_forward(lpt.data(), p.target.data(), wp, p.n, p.c, r, ignore_index, nll_out.data(),
                     &nll_tw);
    cross_entropy_forward(x.data(), p.target.data(), wp, p.n, p.c, r, ignore_index, ce_out.data(),
                          &ce_tw, log_probs.data(), lse.data());
    const auto ref_nll = naive_nll(lps, p, weighted, r, ignore_index);
    const auto ref_ce = naive_nll(lp, p, weighted, r, ignore_index);
    for (std::size_t i = 0; i < ref_nll.size(); ++i) {
      CHECK(static_cast<double>(nll_out[i]) == Approx(ref_nll[i]).epsilon(tol).margin(tol));
      CHECK(static_cast<double>(ce_out[i]) == Approx(ref_ce[i]).epsilon(tol).margin(tol));
    }
    double wsum = 0;
    for (std::int64_t i = 0; i < p.n; ++i) {
      const std::int64_t t = p.target[static_cast<std::size_t>(i)];
      if (t != ignore_index)
        wsum += weighted ? static_cast<double>(w[static_cast<std::size_t>(t)]) : 1;
    }
    CHECK(static_cast<double>(nll_tw) == Approx(wsum).epsilon(tol));
    CHECK(static_cast<double>(ce_tw) == Approx(wsum).epsilon(tol));
    for (std::size_t i = 0; i < lp.size(); ++i)
      REQUIRE(static_cast<double>(log_probs[i]) == Approx(lp[i]).margin(tol).epsilon(tol));
    for (std::int64_t i = 0; i < p.n; ++i) {
      double s = 0;
      for (std::int64_t j = 0; j < p.c; ++j)
        s += std::exp(xs[static_cast<std::size_t>(i * p.c + j)]);
      CHECK(static_cast<double>(lse[static_cast<std::size_t>(i)]) ==
            Approx(std::log(s)).epsilon(tol).margin(tol));
    }
  }
}

}  // namespace

TEST_CASE("nll_loss and cross_entropy forward match the naive reference", "[loss]") {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::mt19937 rng(1);
    for (auto [n, c] : {std::pair<std::int64_t, std::int64_t>{13, 7}, {64, 300}, {8192, 20}}) {
      INFO("threads " << threads << " n " << n << " c " << c);
      for (std::int64_t ignore : {kDefaultIgnoreIndex, std::int64_t{2}}) {
        const Problem p = make_problem(n, c, ignore, rng);
        for (bool weighted : {false, true}) {
          check_forward<double>(p, weighted, ignore, 1e-12);
          check_forward<float>(p, weighted, ignore, 2e-5);
        }
      }
    }
  }
  set_num_threads(2);
}

TEST_CASE("16-bit losses compute in float", "[loss]") {
  std::mt19937 rng(2);
  const Problem p = make_problem(10, 6, kDefaultIgnoreIndex, rng);
  check_forward<Half>(p, true, kDefaultIgnoreIndex, 1e-2);
  check_forward<BFloat16>(p, false, kDefaultIgnoreIndex, 5e-2);
}

TEST_CASE("loss gradients match finite differences of the naive forward", "[loss]") {
  std::mt19937 rng(3);
  const std::int64_t ignore = kDefaultIgnoreIndex;
  const Problem p = make_problem(6, 5, ignore, rng);
  const std::vector<double> gy_rows = {0.3, -1.2, 0.7, 2.0, -0.4, 1.1};
  for (Reduction r : kReductions)
    for (bool weighted : {false, true}) {
      INFO("reduction " << static_cast<int>(r) << " weighted " << weighted);
      const double* wp = weighted ? p.weight.data() : nullptr;
      const std::vector<double> gy = r == Reduction::None ? gy_rows : std::vector<double>{0.8};
      auto scalar_loss = [&](const std::vector<double>& out) {
        double l = 0;
        for (std::size_t i = 0; i < out.size(); ++i) l += gy[i] * out[i];
        return l;
      };
      // nll: differentiate with respect to the log-probabilities.
      std::vector<double> out(6), lp(p.x.size()), lse(6), g_nll(p.x.size()), g_lp(p.x.size()),
          g_logits(p.x.size());
      double tw;
      nll_loss_forward(p.x.data(), p.target.data(), wp, p.n, p.c, r, ignore, out.data(), &tw);
      nll_loss_backward(gy.data(), p.target.data(), wp, p.n, p.c, r, ignore, &tw, g_nll.data());
      cross_entropy_forward(p.x.data(), p.target.data(), wp, p.n, p.c, r, ignore, out.data(), &tw,
                            lp.data(), lse.data());
      cross_entropy_backward(gy.data(), lp.data(), static_cast<const double*>(nullptr),
                             p.target.data(), wp, p.n, p.c, r, ignore, &tw, g_lp.data());
      cross_entropy_backward(gy.data(), p.x.data(), lse.data(), p.target.data(), wp, p.n, p.c, r,
                             ignore, &tw, g_logits.data());
      std::vector<double> aliased = lp;  // grad_logits written over the saved log_probs
      cross_entropy_backward(gy.data(), aliased.data(), static_cast<const double*>(nullptr),
                             p.target.data(), wp, p.n, p.c, r, ignore, &tw, aliased.data());
      const double h = 1e-6;
      for (std::size_t i = 0; i < p.x.size(); ++i) {
        auto xp = p.x, xm = p.x;
        xp[i] += h;
        xm[i] -= h;
        const double fd_nll = (scalar_loss(naive_nll(xp, p, weighted, r, ignore)) -
                               scalar_loss(naive_nll(xm, p, weighted, r, ignore))) /
                              (2 * h);
        const double fd_ce =
            (scalar_loss(naive_nll(naive_log_softmax(xp, p.n, p.c), p, weighted, r, ignore)) -
             scalar_loss(naive_nll(naive_log_softmax(xm, p.n, p.c), p, weighted, r, ignore))) /
            (2 * h);
        CHECK(g_nll[i] == Approx(fd_nll).margin(1e-7));
        CHECK(g_lp[i] == Approx(fd_ce).margin(1e-7));
        CHECK(g_logits[i] == Approx(fd_ce).margin(1e-7));
        CHECK(aliased[i] == Approx(g_lp[i]).margin(1e-15));
      }
    }
}

TEST_CASE("a parallel-sized cross-entropy backward agrees across thread counts", "[loss]") {
  std::mt19937 rng(4);
  const Problem p = make_problem(4096, 40, kDefaultIgnoreIndex, rng);
  const std::vector<float> x(p.x.begin(), p.x.end());
  std::vector<float> lp(x.size()), g1(x.size()), g2(x.size());
  float out, tw, gy = 1.0f;
  cross_entropy_forward(x.data(), p.target.data(), static_cast<const float*>(nullptr), p.n, p.c,
                        Reduction::Mean, kDefaultIgnoreIndex, &out, &tw, lp.data(),
                        static_cast<float*>(nullptr));
  set_num_threads(1);
  cross_entropy_backward(&gy, lp.data(), static_cast<const float*>(nullptr), p.target.data(),
                         static_cast<const float*>(nullptr), p.n, p.c, Reduction::Mean,
                         kDefaultIgnoreIndex, &tw, g1.data());
  set_num_threads(2);
  cross_entropy_backward(&gy, lp.data(), static_cast<const float*>(nullptr), p.target.data(),
                         static_cast<const float*>(nullptr), p.n, p.c, Reduction::Mean,
                         kDefaultIgnoreIndex, &tw, g2.data());
  CHECK(g1 == g2);
  // Each kept row's gradient sums to zero (softmax minus one-hot); ignored rows are zero.
  for (std::int64_t i = 0; i < p.n; ++i) {
    double s = 0, a = 0;
    for (std::int64_t j = 0; j < p.c; ++j) {
      s += g1[static_cast<std::size_t>(i * p.c + j)];
      a += std::abs(g1[static_cast<std::size_t>(i * p.c + j)]);
    }
    CHECK(s == Approx(0).margin(1e-8));
    if (p.target[static_cast<std::size_t>(i)] == kDefaultIgnoreIndex) CHECK(a == 0);
  }
}

TEST_CASE("bad targets raise frugal::Error naming the value and position", "[loss]") {
  const float x[6] = {-1, -2, -3, -1, -2, -3};
  float out[2] = {7, 7}, tw = 7, g[6];
  const float gy = 1;
  const std::int64_t bad_high[2] = {0, 3}, bad_low[2] = {-1, 0}, ignored[2] = {-100, 1};
  CHECK_THROWS_AS(nll_loss_forward(x, bad_high, static_cast<const float*>(nullptr), 2, 3,
                                   Reduction::Mean, kDefaultIgnoreIndex, out, &tw),
                  frugal::Error);
  CHECK(out[0] == 7);  // nothing written before the check
  CHECK_THROWS_WITH(nll_loss_forward(x, bad_high, static_cast<const float*>(nullptr), 2, 3,
                                     Reduction::Sum, kDefaultIgnoreIndex, out, &tw),
                    Catch::Contains("target 3 at position 1"));
  CHECK_THROWS_WITH(
      cross_entropy_forward(x, bad_low, static_cast<const float*>(nullptr), 2, 3, Reduction::Mean,
                            kDefaultIgnoreIndex, out, &tw, static_cast<float*>(nullptr),
                            static_cast<float*>(nullptr)),
      Catch::Contains("target -1 at position 0"));
  CHECK_THROWS_AS(nll_loss_backward(&gy, bad_low, static_cast<const float*>(nullptr), 2, 3,
                                    Reduction::Mean, kDefaultIgnoreIndex, &tw, g),
                  frugal::Error);
  CHECK_THROWS_AS(cross_entropy_backward(&gy, x, static_cast<const float*>(nullptr), bad_high,
                                         static_cast<const float*>(nullptr), 2, 3, Reduction::Mean,
                                         kDefaultIgnoreIndex, &tw, g),
                  frugal::Error);
  // -100 is ignored by default, but is a bad target once another ignore_index is chosen.
  nll_loss_forward(x, ignored, static_cast<const float*>(nullptr), 2, 3, Reduction::Mean,
                   kDefaultIgnoreIndex, out, &tw);
  CHECK(out[0] == 2.0f);
  CHECK(tw == 1.0f);
  CHECK_THROWS_AS(nll_loss_forward(x, ignored, static_cast<const float*>(nullptr), 2, 3,
                                   Reduction::Mean, 0, out, &tw),
                  frugal::Error);
}

TEST_CASE("a mean over only ignored targets is NaN, as in PyTorch", "[loss]") {
  const double x[4] = {-1, -2, -3, -4};
  const std::int64_t t[2] = {-100, -100};
  double out, tw, none[2];
  nll_loss_forward(x, t, static_cast<const double*>(nullptr), 2, 2, Reduction::Mean, -100, &out,
                   &tw);
  CHECK(std::isnan(out));
  CHECK(tw == 0);
  nll_loss_forward(x, t, static_cast<const double*>(nullptr), 2, 2, Reduction::None, -100, none,
                   &tw);
  CHECK(none[0] == 0);
  CHECK(none[1] == 0);
}
