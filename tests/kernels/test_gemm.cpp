// gemm and gemm_batched against a naive triple loop in double: every transpose pair, odd and
// empty sizes, padded leading dimensions, alpha/beta (beta 0 must ignore NaN in C), one and
// two threads, 16-bit types, and the argument errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"

using namespace frugal;
using namespace frugal::kernels::cpu;

namespace {

template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<T> v(n);
  for (auto& x : v) x = T(dist(gen));
  return v;
}

template <class T>
double at(const T& v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

// Element (r, c) of op(X), X stored row-major with leading dimension ld.
template <class T>
double op_at(const std::vector<T>& x, bool trans, std::int64_t ld, std::int64_t r, std::int64_t c) {
  return at(trans ? x[c * ld + r] : x[r * ld + c]);
}

struct GemmCase {
  bool ta, tb;
  std::int64_t m, n, k, pad;  // pad: extra elements per row in every operand
  double alpha, beta;
};

// Runs one gemm and compares element-wise: |got - ref| <= rel * (|alpha| sum|a||b| + |beta c|).
template <class T>
void check_gemm(const GemmCase& g, double rel, std::uint32_t seed) {
  const std::int64_t lda = (g.ta ? g.m : g.k) + g.pad, ldb = (g.tb ? g.k : g.n) + g.pad;
  const std::int64_t ldc = g.n + g.pad;
  const auto a = random_values<T>(static_cast<std::size_t>((g.ta ? g.k : g.m) * lda + 1), seed);
  const auto b = random_values<T>(static_cast<std::size_t>((g.tb ? g.n : g.k) * ldb + 1), seed + 1);
  auto c = random_values<T>(static_cast<std::size_t>(g.m * ldc + 1), seed + 2);
  if (g.beta == 0)
    for (auto& x : c) x = T(std::numeric_limits<float>::quiet_NaN());
  const auto c0 = c;
  gemm<T>(g.ta, g.tb, g.m, g.n, g.k, T(g.alpha), a.data(), lda, b.data(), ldb, T(g.beta), c.data(),
          ldc);
  for (std::int64_t i = 0; i < g.m; ++i) {
    for (std::int64_t j = 0; j < g.n; ++j) {
      double ref = 0, mag = 0;
      for (std::int64_t p = 0; p < g.k; ++p) {
        const double t = op_at(a, g.ta, lda, i, p) * op_at(b, g.tb, ldb, p, j);
        ref += t;
        mag += std::abs(t);
      }
      ref *= g.alpha;
      mag *= std::abs(g.alpha);
      if (g.beta != 0) {
        ref += g.beta * at(c0[i * ldc + j]);
        mag += std::abs(g.beta * at(c0[i * ldc + j]));
      }
      const double got = at(c[i * ldc + j]);
      INFO("m=" << g.m << " n=" << g.n << " k=" << g.k << " ta=" << g.ta << " tb=" << g.tb
                << " i=" << i << " j=" << j);
      REQUIRE(std::abs(got - ref) <= rel * mag + 1e-30);
    }
    // The padding between rows of C is not C: it must be left alone.
    for (std::int64_t j = g.n; j < ldc; ++j)
      if (g.beta != 0) REQUIRE(at(c[i * ldc + j]) == at(c0[i * ldc + j]));
  }
}

const GemmCase kShapes[] = {
    {false, false, 1, 1, 1, 0, 1, 0},
    {false, false, 3, 5, 7, 0, 1, 0},
    {false, false, 17, 33, 65, 3, 0.5, 2},
    {false, false, 64, 31, 129, 0, -1.5, 1},
    {false, false, 130, 70, 90, 5, 1, 0},
    {false, false, 2, 300, 40, 1, 1, 0.25},
    {false, false, 5, 4, 0, 2, 1, 0},
    {false, false, 5, 4, 0, 0, 1, 3},
    {false, false, 0, 4, 3, 0, 1, 1},
    {false, false, 40, 300, 64, 3, 0.5, 1},  // wide C: split by columns at 2 threads
};

}  // namespace

TEST_CASE("gemm matches the naive product for every transpose pair", "[gemm]") {
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    std::uint32_t seed = 1;
    for (const GemmCase& shape : kShapes) {
      for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
          GemmCase g = shape;
          g.ta = ta;
          g.tb = tb;
          check_gemm<float>(g, 1e-5, seed++);
          check_gemm<double>(g, 1e-13, seed++);
        }
      }
    }
  }
  set_num_threads(2);
}

TEST_CASE("gemm in 16-bit types accumulates in float", "[gemm]") {
  set_num_threads(2);
  // Sizes beyond one 64x64x128 tile, so tiles and the k loop are both exercised.
  check_gemm<Half>({false, true, 70, 65, 150, 1, 1, 0}, 2e-3, 7);
  check_gemm<Half>({true, false, 9, 11, 13, 0, 0.5, 1}, 2e-3, 8);
  check_gemm<BFloat16>({true, true, 70, 65, 150, 2, 1, 0}, 1e-2, 9);
  check_gemm<BFloat16>({false, false, 9, 11, 0, 0, 1, 2}, 1e-2, 10);
  // Contiguous rows of both operands (widened sixteen at a time), ragged tile edges.
  check_gemm<BFloat16>({false, false, 70, 67, 131, 3, 1, 0}, 1e-2, 11);
  check_gemm<Half>({false, false, 17, 129, 19, 0, 0.5, 0}, 2e-3, 12);
}

TEST_CASE("gemm_batched matches gemm on each matrix, shared and strided operands", "[gemm]") {
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const std::int64_t size : {std::int64_t{6}, std::int64_t{80}}) {
      for (const std::int64_t batch : {std::int64_t{1}, std::int64_t{3}, std::int64_t{8}}) {
        const std::int64_t m = size, n = size + 3, k = size + 1;
        // A is shared (stride 0); B and C have a gap between matrices.
        const auto a = random_values<float>(static_cast<std::size_t>(k * m), 11);
        const std::int64_t sb = k * n + 5, sc = m * n + 7;
        const auto b = random_values<float>(static_cast<std::size_t>(batch * sb), 12);
        const auto c0 = random_values<float>(static_cast<std::size_t>(batch * sc), 13);
        auto c = c0, expect = c0;
        gemm_batched<float>(true, false, batch, m, n, k, 1.5f, a.data(), m, 0, b.data(), n, sb,
                            0.5f, c.data(), n, sc);
        set_num_threads(1);
        for (std::int64_t i = 0; i < batch; ++i)
          gemm<float>(true, false, m, n, k, 1.5f, a.data(), m, b.data() + i * sb, n, 0.5f,
                      expect.data() + i * sc, n);
        set_num_threads(threads);
        for (std::size_t i = 0; i < c.size(); ++i)
          REQUIRE(c[i] == Approx(expect[i]).margin(1e-5).epsilon(1e-5));
      }
    }
  }
  set_num_threads(2);
}

TEST_CASE("gemm rejects negative sizes and short leading dimensions", "[gemm]") {
  std::vector<float> a(64), b(64), c(64);
  REQUIRE_THROWS_AS(
      gemm<float>(false, false, -1, 2, 2, 1, a.data(), 2, b.data(), 2, 0, c.data(), 2), Error);
  REQUIRE_THROWS_AS(gemm<float>(false, false, 2, 2, 4, 1, a.data(), 3, b.data(), 2, 0, c.data(), 2),
                    Error);
  REQUIRE_THROWS_AS(gemm<double>(false, true, 2, 5, 4, 1, nullptr, 4, nullptr, 3, 0, nullptr, 5),
                    Error);
  REQUIRE_THROWS_AS(gemm<float>(false, false, 2, 5, 4, 1, a.data(), 4, b.data(), 5, 0, c.data(), 4),
                    Error);
  REQUIRE_THROWS_AS(gemm_batched<float>(false, false, -2, 2, 2, 2, 1, a.data(), 2, 4, b.data(), 2,
                                        4, 0, c.data(), 2, 4),
                    Error);
}
