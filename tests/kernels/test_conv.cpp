// conv2d forward and both backwards against one naive loop nest in double (itself checked by
// finite differences): strides, padding, dilation, groups, depthwise, 1x1, non-square shapes,
// with and without bias, one and two threads, 16-bit types, workspace sizing, bad params.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/parallel.h"
#include "tests/kernels/conv_reference.h"

using namespace frugal;
using namespace frugal::kernels::cpu;
using namespace frugal::kernels::cpu::testing;

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

template <class T>
std::vector<double> as_double(const std::vector<T>& v) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) d[i] = at(v[i]);
  return d;
}

template <class T>
void require_close(const std::vector<T>& got, const Ref& ref, double rel, const char* what) {
  REQUIRE(got.size() == ref.value.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << " element " << i << ": got " << at(got[i]) << ", expected " << ref.value[i]);
    REQUIRE(std::abs(at(got[i]) - ref.value[i]) <= rel * ref.mag[i] + 1e-30);
  }
}

// A workspace for `threads` threads, handed over one byte off alignment on purpose.
struct Scratch {
  std::vector<unsigned char> bytes;
  std::size_t size;
  explicit Scratch(std::size_t n) : bytes(n + 1), size(n) {}
  void* data() { return size ? bytes.data() + 1 : nullptr; }
};

template <class T>
std::vector<T> nan_filled(std::int64_t n) {
  return std::vector<T>(static_cast<std::size_t>(n), T(std::numeric_limits<float>::quiet_NaN()));
}

template <class T>
void check_conv(const Conv2dParams& p, bool with_bias, double rel, std::uint32_t seed) {
  const std::int64_t OH = p.out_h(), OW = p.out_w();
  const std::int64_t in_n = p.N * p.C * p.H * p.W, out_n = p.N * p.O * OH * OW;
  const std::int64_t w_n = p.O * (p.C / p.groups) * p.kH * p.kW;
  const auto x = random_values<T>(in_n, seed);
  const auto w = random_values<T>(w_n, seed + 1);
  const auto b = with_bias ? random_values<T>(p.O, seed + 2) : std::vector<T>();
  const auto gout = random_values<T>(out_n, seed + 3);
  const Refs ref = naive_conv2d(p, as_double(x), as_double(w), as_double(b), as_double(gout));
  // Small shapes run on one thread by default; lowering the threshold exercises the split.
  set_conv_min_work_per_thread(1);
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    INFO("threads " << threads);
    Scratch fws(conv2d_forward_workspace_bytes<T>(p, threads));
    auto out = nan_filled<T>(out_n);
    conv2d_forward<T>(p, x.data(), w.data(), with_bias ? b.data() : nullptr, out.data(), fws.data(),
                      fws.size);
    require_close(out, ref.out, rel, "output");

    Scratch iws(conv2d_backward_input_workspace_bytes<T>(p, threads));
    auto gin = nan_filled<T>(in_n);
    conv2d_backward_input<T>(p, gout.data(), w.data(), gin.data(), iws.data(), iws.size);
    require_close(gin, ref.gin, rel, "grad_input");

    Scratch wws(conv2d_backward_weight_workspace_bytes<T>(p, threads));
    auto gw = nan_filled<T>(w_n), gb = nan_filled<T>(p.O);
    conv2d_backward_weight<T>(p, gout.data(), x.data(), gw.data(), with_bias ? gb.data() : nullptr,
                              wws.data(), wws.size);
    require_close(gw, ref.gw, rel, "grad_weight");
    if (with_bias) require_close(gb, ref.gb, rel, "grad_bias");
  }
  set_num_threads(2);
  set_conv_min_work_per_thread(std::int64_t{1} << 16);
}

Conv2dParams make(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t O,
                  std::int64_t kH, std::int64_t kW, std::int64_t sh = 1, std::int64_t sw = 1,
                  std::int64_t ph = 0, std::int64_t pw = 0, std::int64_t dh = 1,
                  std::int64_t dw = 1, std::int64_t groups = 1) {
  Conv2dParams p;
  p.N = N, p.C = C, p.H = H, p.W = W, p.O = O, p.kH = kH, p.kW = kW;
  p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw;
  p.dilation_h = dh, p.dilation_w = dw, p.groups = groups;
  return p;
}

struct Case {
  const char* name;
  Conv2dParams p;
  ConvPath path;  // for float and double
};

const Case kCases[] = {
    {"3x3 pad 1", make(3, 4, 7, 9, 5, 3, 3, 1, 1, 1, 1), ConvPath::kIm2col},
    {"first layer, one input channel", make(2, 1, 8, 6, 4, 3, 3, 1, 1, 1, 1), ConvPath::kIm2col},
    {"stride 2, 3x2 kernel, dilation 2x1", make(2, 3, 11, 8, 4, 3, 2, 2, 2, 1, 0, 2, 1),
     ConvPath::kIm2col},
    {"groups 2, stride 1x2, pad 1x0", make(2, 4, 6, 9, 6, 3, 3, 1, 2, 1, 0, 1, 1, 2),
     ConvPath::kIm2col},
    {"wide input split into row tiles, 4 channels", make(1, 4, 20, 400, 3, 3, 3, 1, 1, 1, 1),
     ConvPath::kIm2col},
    {"shifted taps: 3x3 pad 1, 8 channels", make(3, 8, 7, 9, 5, 3, 3, 1, 1, 1, 1),
     ConvPath::kShifted},
    {"shifted taps: 64 channels, 28x28", make(2, 64, 28, 28, 3, 3, 3, 1, 1, 1, 1),
     ConvPath::kShifted},
    {"shifted taps: 6 samples (weight gradient in chunks), 20 -> 13 channels",
     make(6, 20, 9, 11, 13, 3, 3, 1, 1, 1, 1), ConvPath::kShifted},
    {"shifted taps: wide input split into row tiles", make(1, 64, 12, 300, 3, 3, 3, 1, 1, 1, 1),
     ConvPath::kShifted},
    {"shifted taps: 5x3 kernel, dilation 2x1, pad 2x1", make(2, 8, 9, 8, 4, 5, 3, 1, 1, 2, 1, 2, 1),
     ConvPath::kShifted},
    {"shifted taps: groups 2, no padding", make(2, 16, 6, 7, 6, 3, 3, 1, 1, 0, 0, 1, 1, 2),
     ConvPath::kShifted},
    {"shifted taps: 2x4 kernel, dilation 1x2, pad 0x3, 256 channels wide rows",
     make(1, 256, 5, 40, 2, 2, 4, 1, 1, 0, 3, 1, 2), ConvPath::kShifted},
    // Same-size outputs: float on AVX-512 runs them on the unpadded planes with lane masks.
    {"shifted taps: same size, groups 2, 5x5 pad 2",
     make(2, 16, 6, 7, 10, 5, 5, 1, 1, 2, 2, 1, 1, 2), ConvPath::kShifted},
    {"shifted taps: same size, dilation 2 pad 2, plane smaller than a block",
     make(2, 8, 3, 4, 14, 3, 3, 1, 1, 2, 2, 2, 2), ConvPath::kShifted},
    {"shifted taps: same size, one row", make(2, 8, 1, 37, 5, 3, 3, 1, 1, 1, 1),
     ConvPath::kShifted},
    {"kernel 5x5 stride 3 pad 2", make(1, 2, 13, 10, 3, 5, 5, 3, 3, 2, 2), ConvPath::kIm2col},
    {"1x1", make(3, 6, 5, 7, 4, 1, 1), ConvPath::kPointwise},
    {"1x1 groups 3", make(2, 6, 4, 5, 9, 1, 1, 1, 1, 0, 0, 1, 1, 3), ConvPath::kPointwise},
    {"1x1 stride 2", make(2, 5, 7, 6, 3, 1, 1, 2, 2), ConvPath::kIm2col},
    {"1x1 single sample", make(1, 40, 12, 12, 48, 1, 1), ConvPath::kPointwise},
    {"depthwise 3x3 pad 1", make(3, 5, 9, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 5), ConvPath::kDepthwise},
    {"depthwise 3x3 stride 2 pad 1", make(2, 4, 10, 9, 4, 3, 3, 2, 2, 1, 1, 1, 1, 4),
     ConvPath::kDepthwise},
    {"depthwise 5x3 stride 2x3 dilation 2x1 pad 4x1",
     make(2, 3, 15, 13, 3, 5, 3, 2, 3, 4, 1, 2, 1, 3), ConvPath::kDepthwise},
    {"depthwise 2x2 stride 3 (unused phases)", make(2, 3, 11, 10, 3, 2, 2, 3, 3, 0, 0, 1, 1, 3),
     ConvPath::kDepthwise},
    {"depthwise 7x7 pad 3 (taps in chunks)", make(1, 2, 9, 8, 2, 7, 7, 1, 1, 3, 3, 1, 1, 2),
     ConvPath::kDepthwise},
    {"depthwise 1x1", make(2, 3, 4, 5, 3, 1, 1, 1, 1, 0, 0, 1, 1, 3), ConvPath::kDepthwise},
    // Float on AVX-512 computes depthwise layers on blocks of 16 channels: two full, one not.
    {"depthwise 3x3 stride 2, 37 channels", make(3, 37, 9, 10, 37, 3, 3, 2, 2, 1, 1, 1, 1, 37),
     ConvPath::kDepthwise},
    {"depthwise 3x3 pad 1, 40 channels 14x14", make(2, 40, 14, 14, 40, 3, 3, 1, 1, 1, 1, 1, 1, 40),
     ConvPath::kDepthwise},
};

}  // namespace

TEST_CASE("conv2d matches the naive loops, float and double", "[conv]") {
  std::uint32_t seed = 100;
  for (const Case& c : kCases) {
    INFO(c.name);
    REQUIRE(conv2d_path<float>(c.p) == c.path);
    for (const bool bias : {true, false}) {
      check_conv<float>(c.p, bias, 1e-5, seed++);
      check_conv<double>(c.p, bias, 1e-12, seed++);
    }
  }
}

TEST_CASE("conv2d in 16-bit types computes in float", "[conv]") {
  const Conv2dParams im2col = make(2, 3, 7, 6, 4, 3, 3, 1, 2, 1, 1);
  const Conv2dParams pointwise = make(2, 6, 4, 5, 4, 1, 1);
  const Conv2dParams depthwise = make(2, 4, 8, 9, 4, 3, 3, 2, 1, 1, 1, 1, 1, 4);
  const Conv2dParams depthwise_stride2 = make(2, 4, 8, 9, 4, 3, 3, 2, 2, 1, 1, 1, 1, 4);
  REQUIRE(conv2d_path<Half>(pointwise) == ConvPath::kIm2col);
  const Conv2dParams shifted = make(2, 8, 6, 5, 4, 3, 3, 1, 1, 1, 1);
  REQUIRE(conv2d_path<Half>(shifted) == ConvPath::kShifted);
  for (const auto& p : {im2col, pointwise, depthwise, depthwise_stride2, shifted}) {
    check_conv<Half>(p, true, 3e-3, 7);
    check_conv<BFloat16>(p, true, 2e-2, 8);
  }
}

TEST_CASE("bfloat16 shifted convolution with odd channel counts", "[conv]") {
  // On AVX512_BF16 the shifted path multiplies channel pairs with vdpbf16ps: an odd channel
  // count pairs the last channel with zero, forward (C odd) and backward to the input (O odd),
  // and more than 12 outputs take a second register block. Rerun at every level by the isa
  // suites, where the float kernel or the per-tap GEMMs compute the same numbers.
  const Conv2dParams odd_inputs = make(2, 9, 7, 6, 13, 3, 3, 1, 1, 1, 1);
  const Conv2dParams odd_outputs = make(3, 14, 5, 8, 9, 3, 3, 1, 1, 1, 1, 2, 1);
  for (const auto& p : {odd_inputs, odd_outputs}) {
    REQUIRE(conv2d_path<BFloat16>(p) == ConvPath::kShifted);
    check_conv<BFloat16>(p, true, 2e-2, 9);
  }
}

TEST_CASE("the naive reference is the gradient of the naive forward", "[conv]") {
  const Conv2dParams p = make(2, 4, 6, 7, 6, 3, 2, 2, 1, 1, 1, 1, 2, 2);
  auto x = as_double(random_values<double>(p.N * p.C * p.H * p.W, 1));
  auto w = as_double(random_values<double>(p.O * 2 * p.kH * p.kW, 2));
  const auto b = as_double(random_values<double>(p.O, 3));
  const auto g = as_double(random_values<double>(p.N * p.O * p.out_h() * p.out_w(), 4));
  const Refs ref = naive_conv2d(p, x, w, b, g);
  // L = <g, conv(x, w) + b>, so dL/dx, dL/dw and dL/db are the three backward results.
  auto loss = [&](const std::vector<double>& xs, const std::vector<double>& ws,
                  const std::vector<double>& bs) {
    const Refs r = naive_conv2d(p, xs, ws, bs, g);
    double l = 0;
    for (std::size_t i = 0; i < g.size(); ++i) l += g[i] * r.out.value[i];
    return l;
  };
  const double h = 1e-6;
  for (std::size_t i = 0; i < x.size(); i += 7) {
    auto xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    REQUIRE((loss(xp, w, b) - loss(xm, w, b)) / (2 * h) == Approx(ref.gin.value[i]).margin(1e-7));
  }
  for (std::size_t i = 0; i < w.size(); i += 3) {
    auto wp = w, wm = w;
    wp[i] += h;
    wm[i] -= h;
    REQUIRE((loss(x, wp, b) - loss(x, wm, b)) / (2 * h) == Approx(ref.gw.value[i]).margin(1e-7));
  }
  auto bp = b;
  bp[1] += h;
  REQUIRE((loss(x, w, bp) - loss(x, w, b)) / h == Approx(ref.gb.value[1]).margin(1e-6));
}

TEST_CASE("conv2d grad weight repeats bit for bit at a fixed thread count", "[conv]") {
  set_num_threads(2);
  set_conv_min_work_per_thread(1);  // two slots even on these small shapes
  for (const auto& p : {make(6, 5, 9, 9, 7, 3, 3, 1, 1, 1, 1), make(6, 8, 9, 9, 6, 1, 1),
                        make(6, 5, 9, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 5)}) {
    const auto x = random_values<float>(p.N * p.C * p.H * p.W, 1);
    const auto g = random_values<float>(p.N * p.O * p.out_h() * p.out_w(), 2);
    Scratch ws(conv2d_backward_weight_workspace_bytes<float>(p, 2));
    std::vector<float> gw1(static_cast<std::size_t>(p.O * (p.C / p.groups) * 9)), gw2 = gw1;
    std::vector<float> gb1(static_cast<std::size_t>(p.O)), gb2 = gb1;
    conv2d_backward_weight<float>(p, g.data(), x.data(), gw1.data(), gb1.data(), ws.data(),
                                  ws.size);
    conv2d_backward_weight<float>(p, g.data(), x.data(), gw2.data(), gb2.data(), ws.data(),
                                  ws.size);
    REQUIRE(gw1 == gw2);
    REQUIRE(gb1 == gb2);
  }
  set_conv_min_work_per_thread(std::int64_t{1} << 16);
}

TEST_CASE("conv2d workspace: fewer threads' worth still works, too little throws", "[conv]") {
  set_num_threads(2);
  // Enough work for 4 slots; unpadded, so that the shifted path pads into per-slot buffers.
  const Conv2dParams p = make(4, 16, 8, 8, 16, 3, 3);
  const std::int64_t out_elems = p.N * p.O * p.out_h() * p.out_w();
  const auto x = random_values<float>(p.N * p.C * p.H * p.W, 1);
  const auto w = random_values<float>(p.O * p.C * 9, 2);
  const Refs ref = naive_conv2d(p, as_double(x), as_double(w), {},
                                std::vector<double>(static_cast<std::size_t>(out_elems)));
  const std::size_t one = conv2d_forward_workspace_bytes<float>(p, 1);
  REQUIRE(one > 0);
  REQUIRE(conv2d_forward_workspace_bytes<float>(p, 2) > one);
  REQUIRE(conv2d_forward_workspace_bytes<float>(p, 64) ==
          conv2d_forward_workspace_bytes<float>(p, static_cast<int>(p.N)));
  std::vector<float> out(static_cast<std::size_t>(out_elems));
  Scratch ws(one);
  conv2d_forward<float>(p, x.data(), w.data(), nullptr, out.data(), ws.data(), ws.size);
  require_close(out, ref.out, 1e-5, "output");
  REQUIRE_THROWS_AS(
      conv2d_forward<float>(p, x.data(), w.data(), nullptr, out.data(), ws.data(), one - 1), Error);
  REQUIRE_THROWS_AS(conv2d_forward<float>(p, x.data(), w.data(), nullptr, out.data(), nullptr, 0),
                    Error);
  // A convolution too small to be worth a second thread gets one slot whatever the count.
  const Conv2dParams tiny = make(4, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1);
  REQUIRE(conv2d_forward_workspace_bytes<float>(tiny, 2) ==
          conv2d_forward_workspace_bytes<float>(tiny, 1));
  // A same-size float convolution on AVX-512 reads and writes the tensors in place: only its
  // packed weights, whatever the thread count.
  if (cpu_isa() >= CpuIsa::avx512) {
    const Conv2dParams same = make(4, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1);
    REQUIRE(conv2d_forward_workspace_bytes<float>(same, 2) ==
            conv2d_forward_workspace_bytes<float>(same, 1));
    REQUIRE(conv2d_backward_input_workspace_bytes<float>(same, 2) ==
            conv2d_backward_input_workspace_bytes<float>(same, 1));
    REQUIRE(conv2d_forward_workspace_bytes<float>(same, 1) <= 64 + 12 * 2 * 16 * 9 * 4);
  }
  // The pointwise path needs for forward and grad input at most its packed weights (float on
  // AVX-512), the same for any number of threads; double needs nothing.
  const Conv2dParams pw = make(2, 3, 4, 4, 5, 1, 1);
  REQUIRE(conv2d_forward_workspace_bytes<float>(pw, 2) ==
          conv2d_forward_workspace_bytes<float>(pw, 1));
  REQUIRE(conv2d_forward_workspace_bytes<float>(pw, 1) <= 64 + 256);
  REQUIRE(conv2d_backward_input_workspace_bytes<double>(pw, 2) == 0);
}

TEST_CASE("conv2d with an empty batch writes zero weight gradients", "[conv]") {
  const Conv2dParams p = make(0, 2, 5, 5, 3, 3, 3);
  Scratch ws(conv2d_backward_weight_workspace_bytes<float>(p, 2));
  std::vector<float> gw(3 * 2 * 9, 1.0f), gb(3, 1.0f);
  conv2d_backward_weight<float>(p, nullptr, nullptr, gw.data(), gb.data(), ws.data(), ws.size);
  for (float v : gw) REQUIRE(v == 0.0f);
  for (float v : gb) REQUIRE(v == 0.0f);
}

TEST_CASE("conv2d rejects impossible parameters", "[conv]") {
  REQUIRE_NOTHROW(validate_conv2d(make(1, 4, 5, 5, 6, 3, 3, 1, 1, 0, 0, 1, 1, 2)));
  REQUIRE_THROWS_AS(validate_conv2d(make(1, 4, 5, 5, 6, 3, 3, 1, 1, 0, 0, 1, 1, 3)), Error);
  REQUIRE_THROWS_AS(validate_conv2d(make(1, 4, 5, 5, 5, 3, 3, 1, 1, 0, 0, 1, 1, 2)), Error);
  REQUIRE_THROWS_AS(validate_conv2d(make(1, 4, 2, 5, 6, 3, 3)), Error);  // kernel > input
  REQUIRE_THROWS_AS(validate_conv2d(make(1, 4, 5, 5, 6, 3, 3, 1, 1, 0, 0, 3, 1)),
                    Error);                                                    // dilated
  REQUIRE_THROWS_AS(validate_conv2d(make(1, 4, 5, 5, 6, 3, 3, 0, 1)), Error);  // stride 0
  REQUIRE_THROWS_AS(validate_conv2d(make(1, 4, 5, 5, 6, 3, 3, 1, 1, -1, 0)), Error);
  REQUIRE_THROWS_AS(validate_conv2d(make(1, 0, 5, 5, 6, 3, 3)), Error);
  REQUIRE_THROWS_AS(validate_conv2d(make(-1, 4, 5, 5, 6, 3, 3)), Error);
  REQUIRE_THROWS_AS(validate_conv2d(make(1, 4, 5, 5, 6, 0, 3)), Error);
  REQUIRE_THROWS_AS(conv2d_forward_workspace_bytes<float>(make(1, 4, 2, 2, 6, 3, 3), 1), Error);
  const Conv2dParams p = make(1, 4, 2, 2, 6, 3, 3);
  REQUIRE(p.out_h() == 0);
  REQUIRE_THROWS_WITH(validate_conv2d(p), Catch::Contains("larger than the padded input") &&
                                              Catch::Contains("kernel 3x3"));
}
