// kernels/cuda/gemm (cuBLAS) against the CPU reference on random inputs: all four transpose
// combinations, odd sizes, padded rows, beta 0 over garbage and beta != 0, batched with stride 0.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/gemm.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using namespace frugal::test;

namespace {

struct Shape {
  std::int64_t m, n, k;
  std::int64_t pad_a, pad_b, pad_c;  // extra elements per stored row
};

// Sums over k round differently from the CPU's order: scale the tolerance with sqrt(k).
double scale_for(std::int64_t k) { return std::max(1.0, std::sqrt(static_cast<double>(k))); }

// One gemm_batched call on both backends; batch == 0 with batched == false means plain gemm.
// C starts as NaN where beta == 0 (it must not be read) and as random values otherwise; the
// whole buffer is compared, so padding between rows must come back untouched too.
template <class T>
void check(bool ta, bool tb, const Shape& s, float alpha, float beta, std::int64_t batch,
           bool batched, bool share_a, bool share_b, std::uint32_t seed) {
  const std::int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
  const std::int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
  const std::int64_t lda = a_cols + s.pad_a, ldb = b_cols + s.pad_b, ldc = s.n + s.pad_c;
  const std::int64_t stride_a = share_a ? 0 : a_rows * lda, stride_b = share_b ? 0 : b_rows * ldb;
  const std::int64_t stride_c = s.m * ldc;
  const std::int64_t count = batched ? batch : 1;
  auto a = random_values<T>(
      static_cast<std::size_t>(std::max<std::int64_t>((share_a ? 1 : count) * a_rows * lda, 0)),
      seed);
  auto b = random_values<T>(
      static_cast<std::size_t>(std::max<std::int64_t>((share_b ? 1 : count) * b_rows * ldb, 0)),
      seed + 1);
  std::vector<T> c = random_values<T>(static_cast<std::size_t>(count * stride_c), seed + 2);
  if (beta == 0.0f)
    for (auto& v : c) v = T(std::numeric_limits<float>::quiet_NaN());
  DeviceBuffer<T> da(a), db(b), dc(c);
  const T al(alpha), be(beta);
  if (batched) {
    kernels::cpu::gemm_batched(ta, tb, batch, s.m, s.n, s.k, al, a.data(), lda, stride_a, b.data(),
                               ldb, stride_b, be, c.data(), ldc, stride_c);
    kernels::cuda::gemm_batched(ta, tb, batch, s.m, s.n, s.k, al, da.get(), lda, stride_a, db.get(),
                                ldb, stride_b, be, dc.get(), ldc, stride_c);
  } else {
    kernels::cpu::gemm(ta, tb, s.m, s.n, s.k, al, a.data(), lda, b.data(), ldb, be, c.data(), ldc);
    kernels::cuda::gemm(ta, tb, s.m, s.n, s.k, al, da.get(), lda, db.get(), ldb, be, dc.get(), ldc);
  }
  const auto got = dc.download();
  if (beta == 0.0f) {
    // Every element of C proper was written (no NaN left from the garbage).
    for (std::int64_t i = 0; i < count * s.m; ++i)
      for (std::int64_t j = 0; j < s.n; ++j)
        REQUIRE_FALSE(std::isnan(
            static_cast<double>(static_cast<float>(got[static_cast<std::size_t>(i * ldc + j)]))));
  }
  require_close(got, c, std::string(type_name(T{})) + " gemm", scale_for(s.k));
}

const Shape kShapes[] = {
    {1, 1, 1, 0, 0, 0},    {7, 5, 3, 0, 0, 0},    {17, 31, 13, 3, 2, 5},
    {64, 33, 65, 0, 7, 1}, {3, 129, 70, 1, 0, 0}, {5, 4, 0, 0, 0, 2},  // k == 0
};

}  // namespace

TEMPLATE_TEST_CASE("cuda gemm: all transposes, odd sizes, padded rows vs the CPU", "[cuda]", float,
                   double, Half, BFloat16) {
  std::uint32_t seed = 1;
  for (const Shape& s : kShapes)
    for (int t = 0; t < 4; ++t) {
      INFO("m=" << s.m << " n=" << s.n << " k=" << s.k << " trans_a=" << (t & 1)
                << " trans_b=" << (t >> 1));
      check<TestType>(t & 1, t >> 1, s, 1.0f, 0.0f, 1, false, false, false, seed += 3);
      check<TestType>(t & 1, t >> 1, s, -0.75f, 0.5f, 1, false, false, false, seed += 3);
      check<TestType>(t & 1, t >> 1, s, 2.0f, 1.0f, 1, false, false, false, seed += 3);
    }
}

TEMPLATE_TEST_CASE("cuda gemm: batched, strided and with stride 0 broadcasting", "[cuda]", float,
                   double, Half, BFloat16) {
  std::uint32_t seed = 100;
  for (const Shape& s : {Shape{7, 5, 3, 0, 0, 0}, Shape{17, 31, 13, 3, 2, 5}})
    for (int t = 0; t < 4; ++t)
      for (int share = 0; share < 3; ++share) {
        INFO("m=" << s.m << " n=" << s.n << " k=" << s.k << " trans=" << t << " share=" << share);
        check<TestType>(t & 1, t >> 1, s, 1.0f, 0.0f, 5, true, share == 1, share == 2, seed += 3);
        check<TestType>(t & 1, t >> 1, s, 0.5f, -1.0f, 3, true, share == 1, share == 2, seed += 3);
      }
}

TEST_CASE("cuda gemm: empty sizes launch nothing, bad arguments throw", "[cuda]") {
  // m == 0, n == 0, batch == 0: nothing is touched (null pointers are never read).
  kernels::cuda::gemm<float>(false, false, 0, 4, 3, 1.0f, nullptr, 3, nullptr, 4, 0.0f, nullptr, 4);
  kernels::cuda::gemm<float>(false, false, 4, 0, 3, 1.0f, nullptr, 3, nullptr, 0, 0.0f, nullptr, 0);
  kernels::cuda::gemm_batched<float>(false, false, 0, 4, 4, 4, 1.0f, nullptr, 4, 16, nullptr, 4, 16,
                                     0.0f, nullptr, 4, 16);
  CHECK_THROWS_AS(kernels::cuda::gemm<float>(false, false, -1, 4, 3, 1.0f, nullptr, 3, nullptr, 4,
                                             0.0f, nullptr, 4),
                  Error);
  CHECK_THROWS_AS(kernels::cuda::gemm<float>(false, false, 4, 4, 3, 1.0f, nullptr, 2, nullptr, 4,
                                             0.0f, nullptr, 4),
                  Error);
  CHECK_THROWS_AS(kernels::cuda::gemm_batched<float>(false, false, -1, 4, 4, 4, 1.0f, nullptr, 4,
                                                     16, nullptr, 4, 16, 0.0f, nullptr, 4, 16),
                  Error);
  DeviceBuffer<float> a(16), b(16), c(16);
  CHECK_THROWS_AS(kernels::cuda::gemm_batched<float>(false, false, 2, 4, 4, 4, 1.0f, a.get(), 4, 16,
                                                     b.get(), 4, 16, 0.0f, c.get(), 4, 0),
                  Error);
}
