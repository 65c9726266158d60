// The CUDA softmax kernels against their CPU reference over [outer, dim, inner]: short rows
// (a warp each), long rows (a block each), columns (inner > 1), in place, every type, both
// backward formulas, large values, -inf and NaN, and zero sizes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/softmax.h"
#include "kernels/cuda/softmax.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using frugal::test::DeviceBuffer;
using frugal::test::random_values;
using frugal::test::require_close;
namespace cpu = frugal::kernels::cpu;
namespace gpu = frugal::kernels::cuda;

namespace {

struct Dims {
  std::int64_t outer, dim, inner;
  std::size_t numel() const { return static_cast<std::size_t>(outer * dim * inner); }
  std::string str() const {
    std::string s = "[";
    s += std::to_string(outer);
    s += ", ";
    s += std::to_string(dim);
    s += ", ";
    s += std::to_string(inner);
    return s + "]";
  }
};

// Rows of 1, odd, a warp's most and just past it (a block per row), long rows, and columns
// narrow, wide, long and of one element.
const Dims kShapes[] = {{1, 1, 1},    {7, 10, 1},   {3, 33, 1},   {5, 1024, 1},
                        {4, 1025, 1}, {2, 5000, 1}, {3, 7, 5},    {2, 300, 17},
                        {1, 4, 1000}, {6, 1, 3},    {2, 2000, 3}, {300, 17, 1}};

template <class T>
void check_forward(Dims d, std::uint32_t seed) {
  const auto x = random_values<T>(d.numel(), seed, -6.0, 6.0);
  const std::string what = std::string(test::type_name(T{})) + " " + d.str();
  for (bool log : {false, true}) {
    std::vector<T> y(x.size());
    const DeviceBuffer<T> dx(x);
    DeviceBuffer<T> dy(x.size()), inplace(x);
    if (log) {
      cpu::log_softmax(x.data(), y.data(), d.outer, d.dim, d.inner);
      gpu::log_softmax(dx.get(), dy.get(), d.outer, d.dim, d.inner);
      gpu::log_softmax(inplace.get(), inplace.get(), d.outer, d.dim, d.inner);
    } else {
      cpu::softmax(x.data(), y.data(), d.outer, d.dim, d.inner);
      gpu::softmax(dx.get(), dy.get(), d.outer, d.dim, d.inner);
      gpu::softmax(inplace.get(), inplace.get(), d.outer, d.dim, d.inner);
    }
    const std::string name = what + (log ? " log_softmax" : " softmax");
    const auto got = dy.download();
    require_close(got, y, name);
    require_close(inplace.download(), got, name + " in place", 0.0);  // bit for bit
  }
}

template <class T>
void check_backward(Dims d, std::uint32_t seed) {
  const auto x = random_values<T>(d.numel(), seed, -4.0, 4.0);
  const auto grad_y = random_values<T>(d.numel(), seed + 1);
  const std::string what = std::string(test::type_name(T{})) + " " + d.str();
  for (bool log : {false, true}) {
    // y is the forward's output, as in autograd.
    std::vector<T> y(x.size()), grad_x(x.size());
    if (log) {
      cpu::log_softmax(x.data(), y.data(), d.outer, d.dim, d.inner);
      cpu::log_softmax_backward(y.data(), grad_y.data(), grad_x.data(), d.outer, d.dim, d.inner);
    } else {
      cpu::softmax(x.data(), y.data(), d.outer, d.dim, d.inner);
      cpu::softmax_backward(y.data(), grad_y.data(), grad_x.data(), d.outer, d.dim, d.inner);
    }
    const DeviceBuffer<T> dy(y), dgy(grad_y);
    DeviceBuffer<T> dgx(x.size()), inplace(grad_y);
    if (log) {
      gpu::log_softmax_backward(dy.get(), dgy.get(), dgx.get(), d.outer, d.dim, d.inner);
      gpu::log_softmax_backward(dy.get(), inplace.get(), inplace.get(), d.outer, d.dim, d.inner);
    } else {
      gpu::softmax_backward(dy.get(), dgy.get(), dgx.get(), d.outer, d.dim, d.inner);
      gpu::softmax_backward(dy.get(), inplace.get(), inplace.get(), d.outer, d.dim, d.inner);
    }
    const std::string name = what + (log ? " log_softmax_backward" : " softmax_backward");
    const auto got = dgx.download();
    // The gradient subtracts a sum over the row from each element: allow for that sum's
    // rounding relative to the row's size.
    require_close(got, grad_x, name, 4.0);
    require_close(inplace.download(), got, name + " in place", 0.0);
  }
}

}  // namespace

TEST_CASE("cuda softmax: softmax and log_softmax match the CPU, rows and columns", "[cuda]") {
  std::uint32_t seed = 1;
  for (const Dims& d : kShapes) {
    check_forward<float>(d, seed++);
    check_forward<double>(d, seed++);
    check_forward<Half>(d, seed++);
    check_forward<BFloat16>(d, seed++);
  }
}

TEST_CASE("cuda softmax: both backward formulas match the CPU, rows and columns", "[cuda]") {
  std::uint32_t seed = 100;
  for (const Dims& d : kShapes) {
    check_backward<float>(d, seed += 2);
    check_backward<double>(d, seed += 2);
    check_backward<Half>(d, seed += 2);
    check_backward<BFloat16>(d, seed += 2);
  }
}

TEST_CASE("cuda softmax: rows sum to one and large values stay finite", "[cuda]") {
  for (const Dims& d : {Dims{3, 700, 1}, Dims{2, 3000, 1}, Dims{2, 50, 9}}) {
    // Values near 1000: exp without the max subtracted would overflow.
    const auto x = random_values<float>(d.numel(), 5, 990.0, 1010.0);
    const DeviceBuffer<float> dx(x);
    DeviceBuffer<float> dy(x.size());
    gpu::softmax(dx.get(), dy.get(), d.outer, d.dim, d.inner);
    const auto y = dy.download();
    std::vector<float> ref(x.size());
    cpu::softmax(x.data(), ref.data(), d.outer, d.dim, d.inner);
    require_close(y, ref, "large softmax " + d.str());
    for (std::int64_t o = 0; o < d.outer; ++o)
      for (std::int64_t j = 0; j < d.inner; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < d.dim; ++k) {
          const float v = y[static_cast<std::size_t>((o * d.dim + k) * d.inner + j)];
          REQUIRE(std::isfinite(v));
          s += v;
        }
        CHECK(s == Approx(1.0).epsilon(1e-5));
      }
  }
}

TEST_CASE("cuda softmax: -inf gives 0 (log: -inf) and a NaN fills its row", "[cuda]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const double s = std::exp(-1.0) + 1 + std::exp(-2.0);
  // As rows (inner 1), then the same values as columns (transposed: [1, 4, 2]).
  const std::vector<float> rows = {1000, 1001, 999, -inf, 5, 6, nan, 7};
  const std::vector<float> cols = {1000, 5, 1001, 6, 999, nan, -inf, 7};
  for (bool columns : {false, true}) {
    const DeviceBuffer<float> dx(columns ? cols : rows);
    DeviceBuffer<float> dy(8), dly(8);
    const std::int64_t outer = columns ? 1 : 2, inner = columns ? 2 : 1;
    gpu::softmax(dx.get(), dy.get(), outer, 4, inner);
    gpu::log_softmax(dx.get(), dly.get(), outer, 4, inner);
    const auto y = dy.download(), ly = dly.download();
    auto at = [&](int row, int k) {
      return static_cast<std::size_t>(columns ? k * 2 + row : row * 4 + k);
    };
    INFO((columns ? "columns" : "rows"));
    CHECK(y[at(0, 1)] == Approx(1 / s));
    CHECK(y[at(0, 0)] == Approx(std::exp(-1.0) / s));
    CHECK(y[at(0, 3)] == 0.0f);
    CHECK(ly[at(0, 3)] == -inf);
    CHECK(ly[at(0, 0)] == Approx(-1 - std::log(s)));
    for (int k = 0; k < 4; ++k) {
      CHECK(std::isnan(y[at(1, k)]));
      CHECK(std::isnan(ly[at(1, k)]));
    }
  }
  // A NaN in a long row (a block per row) reaches every element of that row only.
  const Dims d{3, 4000, 1};
  auto x = random_values<float>(d.numel(), 8);
  x[4000 + 1234] = nan;
  const DeviceBuffer<float> dx(x);
  DeviceBuffer<float> dy(x.size());
  gpu::log_softmax(dx.get(), dy.get(), d.outer, d.dim, d.inner);
  std::vector<float> ref(x.size());
  cpu::log_softmax(x.data(), ref.data(), d.outer, d.dim, d.inner);
  const auto y = dy.download();
  require_close(y, ref, "log_softmax with a NaN");
  CHECK(std::isnan(y[4000]));
  CHECK(std::isnan(y[7999]));
  CHECK(!std::isnan(y[3999]));
  CHECK(!std::isnan(y[8000]));
}

TEST_CASE("cuda softmax: zero sizes launch nothing", "[cuda]") {
  const std::vector<float> sentinel(4, 42.0f);
  DeviceBuffer<float> a(sentinel), b(sentinel);
  for (const Dims& d : {Dims{0, 4, 1}, Dims{4, 0, 1}, Dims{1, 4, 0}, Dims{0, 0, 0}}) {
    gpu::softmax(a.get(), b.get(), d.outer, d.dim, d.inner);
    gpu::log_softmax(a.get(), b.get(), d.outer, d.dim, d.inner);
    gpu::softmax_backward(a.get(), a.get(), b.get(), d.outer, d.dim, d.inner);
    gpu::log_softmax_backward(a.get(), a.get(), b.get(), d.outer, d.dim, d.inner);
  }
  require_close(b.download(), sentinel, "untouched output", 0.0);
}

TEST_CASE("cuda softmax: more rows than one launch's grid covers", "[cuda]") {
  // A warp per row, 8 rows per block, at most 65536 blocks: 600001 rows take two passes of the
  // row loop. (The column kernel's loop is the elementwise kernels' FRUGAL_CUDA_KERNEL_LOOP,
  // tested past the cap in test_elementwise.cpp.)
  check_forward<float>(Dims{600001, 3, 1}, 950);
  check_backward<float>(Dims{600001, 3, 1}, 951);
}
