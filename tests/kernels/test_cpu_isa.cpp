// Runtime kernel dispatch: the level names and their errors, and every copy of the hot kernels
// this CPU can run (forced in turn with set_cpu_isa, in this one process) against a scalar
// reference computed here: GEMM, each convolution path, elementwise math and casts, batch
// norm, max pooling and the int8 GEMM.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/pool.h"
#include "kernels/cpu/quantized_gemm.h"
#include "tests/kernels/conv_reference.h"

using namespace frugal;
using namespace frugal::kernels::cpu;
using namespace frugal::kernels::cpu::testing;

namespace {

// Puts the level back when a section ends, whatever happens inside it.
struct IsaGuard {
  CpuIsa saved = cpu_isa();
  ~IsaGuard() { set_cpu_isa(saved); }
};

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

template <class T>
std::vector<T> converted(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
double as_double(T x) {
  return static_cast<double>(static_cast<float>(x));
}

// The shape with a k x k kernel, and the same stride and padding in both directions.
Conv2dParams square_kernel(Conv2dParams p, std::int64_t k, std::int64_t stride, std::int64_t pad) {
  p.kH = p.kW = k;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  return p;
}

template <class T>
void check_conv_forward(const Conv2dParams& p, ConvPath expected_path, double tolerance) {
  validate_conv2d(p);
  REQUIRE(conv2d_path<T>(p) == expected_path);
  const auto in_f = random_floats(static_cast<std::size_t>(p.N * p.C * p.H * p.W), 11);
  const auto w_f =
      random_floats(static_cast<std::size_t>(p.O * (p.C / p.groups) * p.kH * p.kW), 12);
  const auto in = converted<T>(in_f), w = converted<T>(w_f);
  std::vector<double> in_d, w_d;
  for (T x : in) in_d.push_back(as_double(x));
  for (T x : w) w_d.push_back(as_double(x));
  const auto ref = naive_conv2d(p, in_d, w_d, {}, {}).out.value;

  std::vector<T> out(ref.size());
  std::vector<unsigned char> ws(conv2d_forward_workspace_bytes<T>(p, 2));
  conv2d_forward<T>(p, in.data(), w.data(), nullptr, out.data(), ws.data(), ws.size());
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::abs(as_double(out[i]) - ref[i]));
  CHECK(worst <= tolerance);
}

}  // namespace

TEST_CASE("cpu isa names round-trip and unknown names are rejected", "[cpu_isa]") {
  for (CpuIsa isa : kAllCpuIsas) {
    const auto parsed = parse_cpu_isa(cpu_isa_name(isa));
    REQUIRE(parsed.has_value());
    CHECK(*parsed == isa);
  }
  CHECK_FALSE(parse_cpu_isa("avx3").has_value());
  CHECK_FALSE(parse_cpu_isa("").has_value());
  CHECK_FALSE(parse_cpu_isa("AVX2 ").has_value());
}

TEST_CASE("the supported levels run from baseline up to the detected one", "[cpu_isa]") {
  const auto levels = supported_cpu_isas();
  REQUIRE_FALSE(levels.empty());
  CHECK(levels.front() == CpuIsa::baseline);
  for (std::size_t i = 1; i < levels.size(); ++i)
    CHECK(static_cast<int>(levels[i]) == static_cast<int>(levels[i - 1]) + 1);
  if (cpu_isa_variants_built())
    CHECK(levels.back() == detected_cpu_isa());
  else
    CHECK(levels.size() == 1);
  // What runs is one of them, and the report names it.
  const CpuIsa now = cpu_isa();
  CHECK(static_cast<int>(now) <= static_cast<int>(levels.back()));
  if (cpu_isa_variants_built())
    CHECK(describe_cpu_isa().find(cpu_isa_name(now)) != std::string::npos);
  else  // -DFRUGAL_NATIVE=ON: the one copy is named by the flags it was compiled with
    CHECK(describe_cpu_isa().find("compiled for the build machine") != std::string::npos);
}

TEST_CASE("forcing a level this CPU lacks throws and changes nothing", "[cpu_isa]") {
  IsaGuard guard;
  const CpuIsa before = cpu_isa();
  const CpuIsa top = supported_cpu_isas().back();
  if (top == CpuIsa::avx512_bf16) {
    SUCCEED("this CPU runs every level");
    return;
  }
  const CpuIsa above = static_cast<CpuIsa>(static_cast<int>(top) + 1);
  try {
    set_cpu_isa(above);
    FAIL("set_cpu_isa accepted an unsupported level");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(cpu_isa_name(above)) != std::string::npos);
  }
  CHECK(cpu_isa() == before);
}

TEST_CASE("every supported copy of the kernels matches the scalar reference", "[cpu_isa]") {
  IsaGuard guard;
  for (CpuIsa isa : supported_cpu_isas()) {
    set_cpu_isa(isa);
    REQUIRE(cpu_isa() == isa);
    INFO("level " << cpu_isa_name(isa));

    SECTION(std::string("gemm float and bfloat16, ") + cpu_isa_name(isa)) {
      const std::int64_t m = 37, n = 45, k = 70;  // odd sizes: every edge of the tiles
      const auto a_f = random_floats(static_cast<std::size_t>(m * k), 1);
      const auto b_f = random_floats(static_cast<std::size_t>(k * n), 2);
      std::vector<double> ref(static_cast<std::size_t>(m * n), 0.0);
      const auto a_bf = converted<BFloat16>(a_f), b_bf = converted<BFloat16>(b_f);
      std::vector<double> ref_bf(ref.size(), 0.0);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t p = 0; p < k; ++p) {
            ref[i * n + j] += double(a_f[i * k + p]) * b_f[p * n + j];
            ref_bf[i * n + j] += as_double(a_bf[i * k + p]) * as_double(b_bf[p * n + j]);
          }
      std::vector<float> c(ref.size());
      gemm<float>(false, false, m, n, k, 1.0f, a_f.data(), k, b_f.data(), n, 0.0f, c.data(), n);
      std::vector<BFloat16> c_bf(ref.size());
      gemm<BFloat16>(false, false, m, n, k, BFloat16(1.0f), a_bf.data(), k, b_bf.data(), n,
                     BFloat16(0.0f), c_bf.data(), n);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        CHECK(std::abs(c[i] - ref[i]) <= 1e-4);
        // float32 accumulation, one bfloat16 rounding of the result (8 bits of mantissa).
        CHECK(std::abs(as_double(c_bf[i]) - ref_bf[i]) <= 1e-4 + std::abs(ref_bf[i]) / 128);
      }
    }

    SECTION(std::string("bfloat16 gemm, every transpose, ") + cpu_isa_name(isa)) {
      // Past every block edge of the vdpbf16ps kernel (64 x 128 tiles, 256-deep k blocks,
      // 8 x 32 register blocks) and an odd k, so the last pair is half padding.
      const std::int64_t m = 70, n = 133, k = 301;
      const float alpha = 0.5f, beta = -1.5f;
      const auto a = converted<BFloat16>(random_floats(static_cast<std::size_t>(m * k), 11));
      const auto b = converted<BFloat16>(random_floats(static_cast<std::size_t>(k * n), 12));
      const auto c0 = random_floats(static_cast<std::size_t>(m * n), 13);
      for (const bool ta : {false, true})
        for (const bool tb : {false, true}) {
          INFO("trans_a " << ta << " trans_b " << tb);
          // The same matrices stored transposed when asked, so one reference serves all four.
          std::vector<BFloat16> at(a.size()), bt(b.size());
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t p = 0; p < k; ++p) at[ta ? p * m + i : i * k + p] = a[i * k + p];
          for (std::int64_t p = 0; p < k; ++p)
            for (std::int64_t j = 0; j < n; ++j) bt[tb ? j * k + p : p * n + j] = b[p * n + j];
          std::vector<float> c_f = c0;
          gemm_bf16_to_float(ta, tb, m, n, k, alpha, at.data(), ta ? m : k, bt.data(), tb ? k : n,
                             beta, c_f.data(), n);
          const auto c_start = converted<BFloat16>(c0);
          std::vector<BFloat16> c_bf = c_start;
          gemm<BFloat16>(ta, tb, m, n, k, BFloat16(alpha), at.data(), ta ? m : k, bt.data(),
                         tb ? k : n, BFloat16(beta), c_bf.data(), n);
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
              double dot = 0;
              for (std::int64_t p = 0; p < k; ++p)
                dot += as_double(a[i * k + p]) * as_double(b[p * n + j]);
              const std::size_t at_ij = static_cast<std::size_t>(i * n + j);
              const double want = alpha * dot + beta * double(c0[at_ij]);
              CHECK(std::abs(c_f[at_ij] - want) <= 1e-4 * (1 + std::abs(want)) + 1e-4);
              const double want_bf = alpha * dot + beta * as_double(c_start[at_ij]);
              CHECK(std::abs(as_double(c_bf[at_ij]) - want_bf) <= 1e-4 + std::abs(want_bf) / 128);
            }
        }
    }

    SECTION(std::string("every convolution path, ") + cpu_isa_name(isa)) {
      const Conv2dParams im2col = square_kernel({.N = 2, .C = 3, .H = 11, .W = 9, .O = 5}, 3, 2, 1);
      check_conv_forward<float>(im2col, ConvPath::kIm2col, 1e-4);
      const Conv2dParams pointwise{.N = 2, .C = 19, .H = 7, .W = 5, .O = 23};
      check_conv_forward<float>(pointwise, ConvPath::kPointwise, 1e-4);
      const Conv2dParams depthwise =
          square_kernel({.N = 2, .C = 17, .H = 13, .W = 12, .O = 17, .groups = 17}, 3, 2, 1);
      check_conv_forward<float>(depthwise, ConvPath::kDepthwise, 1e-5);
      const Conv2dParams shifted =
          square_kernel({.N = 2, .C = 16, .H = 10, .W = 14, .O = 24}, 3, 1, 1);
      check_conv_forward<float>(shifted, ConvPath::kShifted, 1e-4);
      check_conv_forward<BFloat16>(shifted, conv2d_path<BFloat16>(shifted), 0.05);
    }

    SECTION(std::string("elementwise math and casts, ") + cpu_isa_name(isa)) {
      const std::int64_t n = 1000;  // not a multiple of any vector width
      const auto x = random_floats(n, 3), y = random_floats(n, 4);
      std::vector<float> sum(n), expd(n);
      StridedLoop add{.ndim = 1, .nops = 3, .sizes = {n}};
      add.data[0] = reinterpret_cast<char*>(sum.data());
      add.data[1] = reinterpret_cast<char*>(const_cast<float*>(x.data()));
      add.data[2] = reinterpret_cast<char*>(const_cast<float*>(y.data()));
      for (int k = 0; k < 3; ++k) add.strides[k][0] = sizeof(float);
      binary<float>(BinaryOp::Add, add, 0.5);
      StridedLoop ex = add;
      ex.nops = 2;
      ex.data[0] = reinterpret_cast<char*>(expd.data());
      unary<float>(UnaryOp::Exp, ex);
      std::vector<BFloat16> rounded(n);
      StridedLoop to_bf16 = ex;
      to_bf16.data[0] = reinterpret_cast<char*>(rounded.data());
      to_bf16.strides[0][0] = sizeof(BFloat16);
      cast<BFloat16, float>(to_bf16);
      for (std::int64_t i = 0; i < n; ++i) {
        CHECK(sum[i] == Approx(x[i] + 0.5f * y[i]).margin(1e-6));
        CHECK(expd[i] == Approx(std::exp(double(x[i]))).epsilon(1e-5));
        CHECK(rounded[i].bits == BFloat16(x[i]).bits);  // round to nearest even, bit-exact
      }
    }

    SECTION(std::string("batch norm and max pooling, ") + cpu_isa_name(isa)) {
      const std::int64_t n = 3, c = 4, h = 9, w = 7, hw = h * w;
      const auto x = random_floats(static_cast<std::size_t>(n * c * hw), 5);
      const std::vector<float> weight{1.5f, -0.5f, 2.0f, 1.0f}, bias{0.1f, 0.2f, -0.3f, 0.0f};
      const std::vector<float> mean{0.05f, -0.1f, 0.0f, 0.2f}, var{0.5f, 1.0f, 2.0f, 0.25f};
      std::vector<float> y(x.size());
      batch_norm_forward_eval<float>(x.data(), weight.data(), bias.data(), mean.data(), var.data(),
                                     n, c, hw, 1e-5, y.data(), /*relu=*/true);
      for (std::int64_t i = 0; i < n * c * hw; ++i) {
        const std::int64_t ch = (i / hw) % c;
        const double ref =
            std::max(0.0, (x[i] - mean[ch]) / std::sqrt(var[ch] + 1e-5) * weight[ch] + bias[ch]);
        CHECK(y[i] == Approx(ref).margin(1e-5));
      }

      Pool2dParams pool{.N = n,
                        .C = c,
                        .H = h,
                        .W = w,
                        .kH = 3,
                        .kW = 3,
                        .stride_h = 2,
                        .stride_w = 2,
                        .pad_h = 1,
                        .pad_w = 1};
      validate_pool2d(pool, false);
      const std::int64_t oh = pool.out_h(), ow = pool.out_w();
      std::vector<float> out(static_cast<std::size_t>(n * c * oh * ow));
      std::vector<std::int64_t> idx(out.size());
      max_pool2d_forward<float>(pool, x.data(), out.data(), idx.data());
      for (std::int64_t plane = 0; plane < n * c; ++plane)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            float best = -INFINITY;
            for (std::int64_t ky = 0; ky < 3; ++ky)
              for (std::int64_t kx = 0; kx < 3; ++kx) {
                const std::int64_t iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
                if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                  best = std::max(best, x[plane * hw + iy * w + ix]);
              }
            CHECK(out[(plane * oh + oy) * ow + ox] == best);
          }
    }

    SECTION(std::string("int8 gemm, exact, ") + cpu_isa_name(isa)) {
      const std::int64_t m = 9, n = 21, k = 131;  // k past one 64-byte VNNI block
      std::mt19937 gen(6);
      std::vector<std::uint8_t> a(static_cast<std::size_t>(m * k));
      std::vector<std::int8_t> b(static_cast<std::size_t>(n * k));
      for (auto& v : a) v = static_cast<std::uint8_t>(gen() % 256);
      for (auto& v : b) v = static_cast<std::int8_t>(static_cast<int>(gen() % 255) - 127);
      std::vector<std::int32_t> c(static_cast<std::size_t>(m * n));
      gemm_u8s8s32(m, n, k, a.data(), k, b.data(), k, c.data(), n);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          std::int64_t ref = 0;
          for (std::int64_t p = 0; p < k; ++p) ref += std::int64_t(a[i * k + p]) * b[j * k + p];
          CHECK(c[i * n + j] == ref);
        }
    }
  }
}
