// kernels/cuda/conv_depthwise called directly, against the CPU convolution with groups = C:
// kernel sizes 3 and 5, stride 2, dilation, asymmetric padding, C = 1, a mobilenet-sized layer,
// bias or none; outputs overwritten, not accumulated; non-depthwise shapes rejected.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "kernels/cpu/conv.h"
#include "kernels/cuda/conv_depthwise.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using namespace frugal::test;
using kernels::cpu::Conv2dParams;

namespace {

Conv2dParams depthwise(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W,
                       std::int64_t k, std::int64_t stride, std::int64_t pad_h, std::int64_t pad_w,
                       std::int64_t dilation) {
  Conv2dParams p;
  p.N = N, p.C = C, p.H = H, p.W = W, p.O = C, p.groups = C, p.kH = p.kW = k;
  p.stride_h = p.stride_w = stride;
  p.pad_h = pad_h, p.pad_w = pad_w;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }

template <class T>
void check(const Conv2dParams& p, bool with_bias, std::uint32_t seed) {
  namespace cpu = kernels::cpu;
  namespace cu = kernels::cuda;
  const std::int64_t out_n = p.N * p.C * p.out_h() * p.out_w(), in_n = p.N * p.C * p.H * p.W;
  const std::int64_t w_n = p.C * p.kH * p.kW;
  const auto x = random_values<T>(sz(in_n), seed), w = random_values<T>(sz(w_n), seed + 1);
  const auto b = random_values<T>(sz(p.C), seed + 2), gy = random_values<T>(sz(out_n), seed + 3);
  DeviceBuffer<T> dx(x), dw(w), db(b), dgy(gy);
  const double taps = static_cast<double>(p.kH * p.kW);

  std::vector<T> y(sz(out_n));
  std::vector<unsigned char> ws(cpu::conv2d_forward_workspace_bytes<T>(p, 1));
  cpu::conv2d_forward(p, x.data(), w.data(), with_bias ? b.data() : nullptr, y.data(), ws.data(),
                      ws.size());
  DeviceBuffer<T> dy(random_values<T>(sz(out_n), seed + 4, 5, 6));
  cu::depthwise_conv2d_forward(p, dx.get(), dw.get(), with_bias ? db.get() : nullptr, dy.get());
  require_close(dy.download(), y, "depthwise forward", taps);

  std::vector<T> gx(sz(in_n));
  ws.assign(cpu::conv2d_backward_input_workspace_bytes<T>(p, 1), 0);
  cpu::conv2d_backward_input(p, gy.data(), w.data(), gx.data(), ws.data(), ws.size());
  DeviceBuffer<T> dgx(random_values<T>(sz(in_n), seed + 5, 5, 6));
  cu::depthwise_conv2d_backward_input(p, dgy.get(), dw.get(), dgx.get());
  require_close(dgx.download(), gx, "depthwise backward input", taps);

  std::vector<T> gw(sz(w_n)), gb(sz(p.C));
  ws.assign(cpu::conv2d_backward_weight_workspace_bytes<T>(p, 1), 0);
  cpu::conv2d_backward_weight(p, gy.data(), x.data(), gw.data(), with_bias ? gb.data() : nullptr,
                              ws.data(), ws.size());
  DeviceBuffer<T> dgw(random_values<T>(sz(w_n), seed + 6, 5, 6));
  DeviceBuffer<T> dgb(random_values<T>(sz(p.C), seed + 7, 5, 6));
  cu::depthwise_conv2d_backward_weight(p, dgy.get(), dx.get(), dgw.get(),
                                       with_bias ? dgb.get() : nullptr);
  const double terms = std::sqrt(static_cast<double>(p.N * p.out_h() * p.out_w()));
  require_close(dgw.download(), gw, "depthwise backward weight", std::max(1.0, terms));
  if (with_bias) require_close(dgb.download(), gb, "depthwise backward bias", std::max(1.0, terms));
}

const Conv2dParams kShapes[] = {
    depthwise(2, 4, 9, 7, 3, 1, 1, 1, 1),     // 3x3 pad 1
    depthwise(3, 6, 11, 10, 3, 2, 1, 1, 1),   // stride 2
    depthwise(2, 3, 12, 13, 5, 2, 2, 1, 1),   // 5x5, asymmetric padding
    depthwise(1, 5, 12, 9, 3, 1, 2, 2, 2),    // dilation 2
    depthwise(2, 1, 8, 8, 3, 1, 0, 0, 1),     // a single channel, no padding
    depthwise(4, 64, 14, 14, 3, 2, 1, 1, 1),  // a mobilenet stride-2 layer
};

}  // namespace

TEMPLATE_TEST_CASE("cuda depthwise conv matches the CPU", "[cuda][conv]", float, double, Half,
                   BFloat16) {
  std::uint32_t seed = 100;
  for (const Conv2dParams& p : kShapes)
    for (bool with_bias : {false, true}) {
      INFO("N=" << p.N << " C=" << p.C << " H=" << p.H << " W=" << p.W << " k=" << p.kH
                << " stride=" << p.stride_h << " pad=" << p.pad_h << "," << p.pad_w
                << " dilation=" << p.dilation_h << " bias=" << with_bias);
      check<TestType>(p, with_bias, seed += 10);
    }
}

TEST_CASE("cuda depthwise conv: N = 0 zeroes the weight and bias gradients", "[cuda][conv]") {
  const Conv2dParams p = depthwise(0, 3, 8, 8, 3, 1, 1, 1, 1);
  kernels::cuda::depthwise_conv2d_forward<float>(p, nullptr, nullptr, nullptr, nullptr);
  DeviceBuffer<float> gw(random_values<float>(27, 1)), gb(random_values<float>(3, 2));
  kernels::cuda::depthwise_conv2d_backward_weight<float>(p, nullptr, nullptr, gw.get(), gb.get());
  for (float v : gw.download()) CHECK(v == 0.0f);
  for (float v : gb.download()) CHECK(v == 0.0f);
}

TEST_CASE("cuda depthwise conv rejects a convolution that is not depthwise", "[cuda][conv]") {
  Conv2dParams p = depthwise(1, 4, 8, 8, 3, 1, 1, 1, 1);
  p.groups = 2;
  CHECK_FALSE(kernels::cuda::is_depthwise(p));
  DeviceBuffer<float> buf(1024);
  REQUIRE_THROWS_WITH(
      kernels::cuda::depthwise_conv2d_forward<float>(p, buf.get(), buf.get(), nullptr, buf.get()),
      Catch::Contains("not a depthwise convolution"));
}
