// Pooling against naive references written from the definitions (scatter-form backwards):
// max with argmax indices, ties and NaN; average with and without padding in the divisor and
// ceil_mode; adaptive average on divisible and indivisible sizes; threads; 16-bit; errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pool.h"

using namespace frugal;
using namespace frugal::kernels::cpu;

namespace {

template <class T>
double at(const T& v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

template <class T>
std::vector<T> random_values(std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = T(dist(gen));
  return v;
}

Pool2dParams make(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t kH,
                  std::int64_t kW, std::int64_t sh, std::int64_t sw, std::int64_t ph = 0,
                  std::int64_t pw = 0, std::int64_t dh = 1, std::int64_t dw = 1,
                  bool ceil_mode = false, bool include_pad = true) {
  Pool2dParams p;
  p.N = N, p.C = C, p.H = H, p.W = W, p.kH = kH, p.kW = kW, p.stride_h = sh, p.stride_w = sw;
  p.pad_h = ph, p.pad_w = pw, p.dilation_h = dh, p.dilation_w = dw;
  p.ceil_mode = ceil_mode, p.count_include_pad = include_pad;
  return p;
}

// The taps of window (oh, ow) that fall inside the input, in row-major order.
std::vector<std::int64_t> window(const Pool2dParams& p, std::int64_t oh, std::int64_t ow) {
  std::vector<std::int64_t> at;
  for (std::int64_t i = 0; i < p.kH; ++i)
    for (std::int64_t j = 0; j < p.kW; ++j) {
      const std::int64_t h = oh * p.stride_h - p.pad_h + i * p.dilation_h;
      const std::int64_t w = ow * p.stride_w - p.pad_w + j * p.dilation_w;
      if (h >= 0 && h < p.H && w >= 0 && w < p.W) at.push_back(h * p.W + w);
    }
  return at;
}

// PyTorch's divisor: the window clipped to the padded input, or only to the input.
double divisor(const Pool2dParams& p, std::int64_t oh, std::int64_t ow) {
  if (!p.count_include_pad) return static_cast<double>(window(p, oh, ow).size());
  auto extent = [](std::int64_t o, std::int64_t size, std::int64_t k, std::int64_t s,
                   std::int64_t pad) {
    const std::int64_t start = o * s - pad;
    return std::min(start + k, size + pad) - start;
  };
  return static_cast<double>(extent(oh, p.H, p.kH, p.stride_h, p.pad_h) *
                             extent(ow, p.W, p.kW, p.stride_w, p.pad_w));
}

template <class T>
void check_max(const Pool2dParams& p, std::uint32_t seed) {
  const std::int64_t OH = p.out_h(), OW = p.out_w(), HW = p.H * p.W, planes = p.N * p.C;
  const auto x = random_values<T>(planes * HW, seed);
  const auto g = random_values<T>(planes * OH * OW, seed + 1);
  std::vector<double> out_ref(static_cast<std::size_t>(planes * OH * OW));
  std::vector<std::int64_t> idx_ref(out_ref.size());
  std::vector<double> gin_ref(static_cast<std::size_t>(planes * HW), 0.0);
  for (std::int64_t u = 0; u < planes; ++u)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        const auto taps = window(p, oh, ow);
        REQUIRE(!taps.empty());
        std::int64_t best = taps[0];
        for (std::int64_t t : taps)
          if (at(x[u * HW + t]) > at(x[u * HW + best])) best = t;
        const std::int64_t o = (u * OH + oh) * OW + ow;
        out_ref[o] = at(x[u * HW + best]);
        idx_ref[o] = best;
        gin_ref[u * HW + best] += at(g[o]);
      }
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    std::vector<T> out(out_ref.size());
    std::vector<std::int64_t> idx(out_ref.size(), -7);
    max_pool2d_forward<T>(p, x.data(), out.data(), idx.data());
    for (std::size_t i = 0; i < out.size(); ++i) {
      REQUIRE(at(out[i]) == out_ref[i]);
      REQUIRE(idx[i] == idx_ref[i]);
    }
    std::vector<T> gin(gin_ref.size(), T(std::numeric_limits<float>::quiet_NaN()));
    max_pool2d_backward<T>(p, g.data(), idx.data(), gin.data());
    for (std::size_t i = 0; i < gin.size(); ++i)
      REQUIRE(at(gin[i]) ==
              Approx(gin_ref[i])
                  .margin(std::is_same_v<T, float> || std::is_same_v<T, double> ? 1e-6 : 2e-2));
  }
  set_num_threads(2);
}

template <class T>
void check_avg(const Pool2dParams& p, double tol, std::uint32_t seed) {
  const std::int64_t OH = p.out_h(), OW = p.out_w(), HW = p.H * p.W, planes = p.N * p.C;
  const auto x = random_values<T>(planes * HW, seed);
  const auto g = random_values<T>(planes * OH * OW, seed + 1);
  std::vector<double> out_ref(static_cast<std::size_t>(planes * OH * OW));
  std::vector<double> gin_ref(static_cast<std::size_t>(planes * HW), 0.0);
  for (std::int64_t u = 0; u < planes; ++u)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        const std::int64_t o = (u * OH + oh) * OW + ow;
        const auto taps = window(p, oh, ow);
        const double d = divisor(p, oh, ow);
        double s = 0;
        for (std::int64_t t : taps) {
          s += at(x[u * HW + t]);
          gin_ref[u * HW + t] += at(g[o]) / d;
        }
        out_ref[o] = taps.empty() ? 0.0 : s / d;
      }
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    std::vector<T> out(out_ref.size(), T(std::numeric_limits<float>::quiet_NaN()));
    avg_pool2d_forward<T>(p, x.data(), out.data());
    for (std::size_t i = 0; i < out.size(); ++i)
      REQUIRE(at(out[i]) == Approx(out_ref[i]).margin(tol));
    std::vector<T> gin(gin_ref.size(), T(std::numeric_limits<float>::quiet_NaN()));
    avg_pool2d_backward<T>(p, g.data(), gin.data());
    for (std::size_t i = 0; i < gin.size(); ++i)
      REQUIRE(at(gin[i]) == Approx(gin_ref[i]).margin(tol));
  }
  set_num_threads(2);
}

template <class T>
void check_adaptive(const AdaptivePool2dParams& p, double tol, std::uint32_t seed) {
  const std::int64_t OH = p.out_h, OW = p.out_w, HW = p.H * p.W, planes = p.N * p.C;
  const auto x = random_values<T>(planes * HW, seed);
  const auto g = random_values<T>(planes * OH * OW, seed + 1);
  std::vector<double> out_ref(static_cast<std::size_t>(planes * OH * OW));
  std::vector<double> gin_ref(static_cast<std::size_t>(planes * HW), 0.0);
  for (std::int64_t u = 0; u < planes; ++u)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        const auto h0 = static_cast<std::int64_t>(std::floor(double(oh) * p.H / OH));
        const auto h1 = static_cast<std::int64_t>(std::ceil(double(oh + 1) * p.H / OH));
        const auto w0 = static_cast<std::int64_t>(std::floor(double(ow) * p.W / OW));
        const auto w1 = static_cast<std::int64_t>(std::ceil(double(ow + 1) * p.W / OW));
        const double d = static_cast<double>((h1 - h0) * (w1 - w0));
        const std::int64_t o = (u * OH + oh) * OW + ow;
        double s = 0;
        for (std::int64_t h = h0; h < h1; ++h)
          for (std::int64_t w = w0; w < w1; ++w) {
            s += at(x[u * HW + h * p.W + w]);
            gin_ref[u * HW + h * p.W + w] += at(g[o]) / d;
          }
        out_ref[o] = s / d;
      }
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    std::vector<T> out(out_ref.size());
    adaptive_avg_pool2d_forward<T>(p, x.data(), out.data());
    for (std::size_t i = 0; i < out.size(); ++i)
      REQUIRE(at(out[i]) == Approx(out_ref[i]).margin(tol));
    std::vector<T> gin(gin_ref.size(), T(std::numeric_limits<float>::quiet_NaN()));
    adaptive_avg_pool2d_backward<T>(p, g.data(), gin.data());
    for (std::size_t i = 0; i < gin.size(); ++i)
      REQUIRE(at(gin[i]) == Approx(gin_ref[i]).margin(tol));
  }
  set_num_threads(2);
}

const Pool2dParams kMaxCases[] = {
    make(2, 3, 8, 8, 2, 2, 2, 2),                    // the usual 2x2/2
    make(2, 3, 28, 28, 2, 2, 2, 2),                  // a CNN's size
    make(2, 3, 9, 7, 2, 2, 2, 2),                    // 2x2/2 on odd sizes (last row, column unused)
    make(1, 2, 6, 71, 2, 2, 2, 2),                   // rows of 35 outputs: 16 + 16 + 3
    make(2, 2, 9, 7, 3, 3, 2, 2, 1, 1),              // overlapping windows, padding
    make(1, 2, 10, 11, 3, 2, 1, 2, 1, 1, 2, 2),      // dilation, non-square
    make(1, 2, 7, 8, 3, 3, 2, 2, 1, 0, 1, 1, true),  // ceil_mode
    make(2, 1, 5, 5, 5, 5, 1, 1, 2, 2),              // kernel the size of the input
};

}  // namespace

TEST_CASE("max_pool2d matches the naive window maxima and argmax", "[pool]") {
  std::uint32_t seed = 1;
  for (const auto& p : kMaxCases) {
    check_max<float>(p, seed++);
    check_max<double>(p, seed++);
  }
  check_max<Half>(kMaxCases[2], 50);
  check_max<BFloat16>(kMaxCases[3], 51);
}

TEST_CASE("max_pool2d picks the first of equal maxima and propagates NaN", "[pool]") {
  const Pool2dParams p = make(1, 1, 4, 4, 2, 2, 2, 2);
  std::vector<float> x(16, 1.0f), out(4);
  std::vector<std::int64_t> idx(4);
  x[5] = std::numeric_limits<float>::quiet_NaN();  // window (0, 0): rows 0-1, cols 0-1
  max_pool2d_forward<float>(p, x.data(), out.data(), idx.data());
  REQUIRE(std::isnan(out[0]));
  REQUIRE(idx[0] == 5);
  REQUIRE(out[1] == 1.0f);
  REQUIRE(idx[1] == 2);
  REQUIRE(idx[3] == 10);
  // Without indices (no backward to follow) the output is the same.
  std::vector<float> out2(4);
  max_pool2d_forward<float>(p, x.data(), out2.data(), nullptr);
  REQUIRE(std::isnan(out2[0]));
  REQUIRE(out2[1] == out[1]);
  const Pool2dParams q = make(1, 1, 7, 8, 3, 3, 2, 2, 1, 1);  // the generic path too
  std::vector<float> y(56), o1(16), o2(16);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>((i * 37) % 11);
  std::vector<std::int64_t> qi(16);
  max_pool2d_forward<float>(q, y.data(), o1.data(), qi.data());
  max_pool2d_forward<float>(q, y.data(), o2.data(), nullptr);
  REQUIRE(o1 == o2);
}

TEST_CASE("max_pool2d_backward refuses indices outside the plane", "[pool]") {
  const Pool2dParams p = make(1, 1, 4, 4, 2, 2, 2, 2);
  std::vector<float> g(4, 1.0f), gin(16);
  std::vector<std::int64_t> idx = {0, 2, 8, 16};
  REQUIRE_THROWS_AS(max_pool2d_backward<float>(p, g.data(), idx.data(), gin.data()), Error);
}

TEST_CASE("avg_pool2d matches the naive averages and their gradient", "[pool]") {
  std::uint32_t seed = 10;
  for (const bool include_pad : {true, false}) {
    for (const auto& base :
         {make(2, 3, 8, 8, 2, 2, 2, 2), make(2, 2, 9, 7, 3, 3, 2, 2, 1, 1),
          make(1, 2, 10, 11, 3, 2, 1, 2, 1, 1), make(1, 2, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, true),
          make(1, 2, 6, 6, 4, 4, 3, 3, 2, 2, 1, 1, true)}) {
      Pool2dParams p = base;
      p.count_include_pad = include_pad;
      check_avg<float>(p, 1e-6, seed++);
      check_avg<double>(p, 1e-12, seed++);
    }
  }
  check_avg<Half>(make(2, 2, 9, 7, 3, 3, 2, 2, 1, 1), 4e-3, 60);
  check_avg<BFloat16>(make(2, 2, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, false, false), 2e-2, 61);
}

TEST_CASE("adaptive_avg_pool2d matches PyTorch's floor/ceil windows", "[pool]") {
  std::uint32_t seed = 20;
  for (const auto& p :
       {AdaptivePool2dParams{2, 3, 7, 7, 1, 1}, AdaptivePool2dParams{2, 2, 7, 9, 3, 4},
        AdaptivePool2dParams{1, 2, 10, 10, 5, 5}, AdaptivePool2dParams{1, 2, 3, 5, 5, 7},
        AdaptivePool2dParams{3, 1, 6, 6, 6, 6}}) {
    check_adaptive<float>(p, 1e-6, seed++);
    check_adaptive<double>(p, 1e-12, seed++);
  }
  check_adaptive<Half>({2, 2, 7, 9, 3, 4}, 4e-3, 70);
  check_adaptive<BFloat16>({2, 2, 7, 9, 3, 4}, 2e-2, 71);
}

TEST_CASE("pooling rejects impossible parameters", "[pool]") {
  REQUIRE_NOTHROW(validate_pool2d(make(1, 1, 4, 4, 3, 3, 1, 1, 1, 1), true));
  REQUIRE_THROWS_AS(validate_pool2d(make(1, 1, 4, 4, 2, 2, 2, 2, 2, 0), false),
                    Error);                                                        // pad > k/2
  REQUIRE_THROWS_AS(validate_pool2d(make(1, 1, 4, 4, 2, 2, 0, 2), false), Error);  // stride 0
  REQUIRE_THROWS_AS(validate_pool2d(make(1, 1, 2, 4, 3, 3, 1, 1), false), Error);  // too big
  REQUIRE_THROWS_AS(validate_pool2d(make(1, 1, 9, 9, 3, 3, 1, 1, 0, 0, 2, 2), true), Error);
  REQUIRE_THROWS_AS(validate_pool2d(make(1, 0, 4, 4, 2, 2, 2, 2), false), Error);
  std::vector<float> x(16), out(4);
  std::vector<std::int64_t> idx(4);
  REQUIRE_THROWS_AS(
      max_pool2d_forward<float>(make(1, 1, 4, 4, 0, 2, 2, 2), x.data(), out.data(), idx.data()),
      Error);
  REQUIRE_THROWS_AS(adaptive_avg_pool2d_forward<float>({1, 1, 4, 4, 0, 2}, x.data(), out.data()),
                    Error);
  // ceil_mode drops a last window that would start in the padding, as PyTorch does.
  REQUIRE(make(1, 1, 6, 6, 2, 2, 2, 2, 0, 0, 1, 1, true).out_h() == 3);
  REQUIRE(make(1, 1, 7, 7, 2, 2, 2, 2, 0, 0, 1, 1, true).out_h() == 4);
  REQUIRE(make(1, 1, 5, 5, 2, 2, 2, 2, 1, 1, 1, 1, true).out_h() == 3);
}

// The compact path (and, for 2x2/2 windows on AVX-512, its vector kernel, which reads 16-bit
// data as float) against the int64-index path (scalar): same outputs, same gradients.
template <class T>
void check_compact_matches_wide(std::uint32_t seed) {
  for (const Pool2dParams& p : kMaxCases) {
    const std::int64_t in_n = p.N * p.C * p.H * p.W, out_n = p.N * p.C * p.out_h() * p.out_w();
    std::mt19937 rng(seed++);
    std::uniform_int_distribution<int> value(0, 6);  // few values: ties in every window
    std::vector<T> x(static_cast<std::size_t>(in_n)), g(static_cast<std::size_t>(out_n));
    for (auto& v : x) v = static_cast<T>(static_cast<float>(value(rng)) * 0.375f);
    for (auto& v : g) v = static_cast<T>(static_cast<float>(value(rng)) - 3);
    if (in_n > 7) x[7] = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
    std::vector<T> out_a(g.size()), out_b(g.size()), gin_a(x.size()), gin_b(x.size());
    std::vector<std::int64_t> wide(g.size());
    std::vector<std::uint8_t> compact(g.size());
    max_pool2d_forward<T>(p, x.data(), out_a.data(), wide.data());
    max_pool2d_forward_compact<T>(p, x.data(), out_b.data(), compact.data());
    for (std::size_t i = 0; i < g.size(); ++i) {
      const float a = static_cast<float>(out_a[i]), b = static_cast<float>(out_b[i]);
      REQUIRE((a == b || (std::isnan(a) && std::isnan(b))));
    }
    max_pool2d_backward<T>(p, g.data(), wide.data(), gin_a.data());
    max_pool2d_backward_compact<T>(p, g.data(), compact.data(), gin_b.data());
    for (std::size_t i = 0; i < x.size(); ++i)
      REQUIRE(static_cast<float>(gin_a[i]) == static_cast<float>(gin_b[i]));
  }
}

TEST_CASE("max_pool2d with compact window indices matches the int64 indices", "[pool]") {
  check_compact_matches_wide<float>(300);
  check_compact_matches_wide<Half>(400);
  check_compact_matches_wide<BFloat16>(500);
  const Pool2dParams p = make(1, 1, 4, 4, 2, 2, 2, 2);
  std::vector<float> g(4, 1.0f), gin(16);
  std::vector<std::uint8_t> bad = {0, 1, 2, 4};  // 4 is outside a 2x2 window
  REQUIRE_THROWS_AS(max_pool2d_backward_compact<float>(p, g.data(), bad.data(), gin.data()), Error);
}
