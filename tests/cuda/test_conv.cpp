// kernels/cuda/conv (cuDNN, and the direct depthwise path) against the CPU reference on random
// inputs: 3x3 pad 1, stride 2, 1x1, dilation, groups 2, depthwise, bias, N = 0, workspaces.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "kernels/cpu/conv.h"
#include "kernels/cuda/conv.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using namespace frugal::test;
using kernels::cpu::Conv2dParams;

namespace {

Conv2dParams make(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t O,
                  std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                  std::int64_t groups) {
  Conv2dParams p;
  p.N = N, p.C = C, p.H = H, p.W = W, p.O = O, p.kH = k, p.kW = k;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dilation;
  p.groups = groups;
  return p;
}

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }
double scale_for(std::int64_t terms) {
  return std::max(1.0, std::sqrt(static_cast<double>(terms)));
}

template <class T>
void check_all(const Conv2dParams& p, bool with_bias, std::uint32_t seed) {
  namespace cpu = kernels::cpu;
  namespace cu = kernels::cuda;
  const std::int64_t oh = p.out_h(), ow = p.out_w();
  const std::int64_t in_n = p.N * p.C * p.H * p.W, out_n = p.N * p.O * oh * ow;
  const std::int64_t w_n = p.O * (p.C / p.groups) * p.kH * p.kW;
  const auto x = random_values<T>(sz(in_n), seed);
  const auto w = random_values<T>(sz(w_n), seed + 1);
  const auto bias = random_values<T>(sz(p.O), seed + 2);
  const auto gy = random_values<T>(sz(out_n), seed + 3);
  DeviceBuffer<T> dx(x), dw(w), dbias(bias), dgy(gy);
  const std::string name = type_name(T{});

  {  // forward
    std::vector<unsigned char> ws(cpu::conv2d_forward_workspace_bytes<T>(p, 1));
    std::vector<T> y(sz(out_n));
    cpu::conv2d_forward(p, x.data(), w.data(), with_bias ? bias.data() : nullptr, y.data(),
                        ws.data(), ws.size());
    const std::size_t bytes = cu::conv2d_forward_workspace_bytes<T>(p, 1);
    DeviceBuffer<unsigned char> dws(bytes);
    DeviceBuffer<T> dy(sz(out_n));
    cu::conv2d_forward(p, dx.get(), dw.get(), with_bias ? dbias.get() : nullptr, dy.get(),
                       dws.get(), bytes);
    require_close(dy.download(), y, name + " conv2d_forward",
                  scale_for(p.C / p.groups * p.kH * p.kW));
  }
  {  // backward input
    std::vector<unsigned char> ws(cpu::conv2d_backward_input_workspace_bytes<T>(p, 1));
    std::vector<T> gx(sz(in_n));
    cpu::conv2d_backward_input(p, gy.data(), w.data(), gx.data(), ws.data(), ws.size());
    const std::size_t bytes = cu::conv2d_backward_input_workspace_bytes<T>(p, 1);
    DeviceBuffer<unsigned char> dws(bytes);
    DeviceBuffer<T> dgx(sz(in_n));
    cu::conv2d_backward_input(p, dgy.get(), dw.get(), dgx.get(), dws.get(), bytes);
    require_close(dgx.download(), gx, name + " conv2d_backward_input",
                  scale_for(p.O / p.groups * p.kH * p.kW));
  }
  {  // backward weight (+ bias)
    std::vector<unsigned char> ws(cpu::conv2d_backward_weight_workspace_bytes<T>(p, 1));
    std::vector<T> gw(sz(w_n)), gb(sz(p.O));
    cpu::conv2d_backward_weight(p, gy.data(), x.data(), gw.data(),
                                with_bias ? gb.data() : nullptr, ws.data(), ws.size());
    const std::size_t bytes = cu::conv2d_backward_weight_workspace_bytes<T>(p, 1);
    DeviceBuffer<unsigned char> dws(bytes);
    // Garbage in the outputs: they must be overwritten, not accumulated into.
    DeviceBuffer<T> dgw(random_values<T>(sz(w_n), seed + 4, 5, 6));
    DeviceBuffer<T> dgb(random_values<T>(sz(p.O), seed + 5, 5, 6));
    cu::conv2d_backward_weight(p, dgy.get(), dx.get(), dgw.get(), with_bias ? dgb.get() : nullptr,
                               dws.get(), bytes);
    require_close(dgw.download(), gw, name + " conv2d_backward_weight",
                  scale_for(p.N * oh * ow));
    if (with_bias)
      require_close(dgb.download(), gb, name + " conv2d_backward_weight bias",
                    scale_for(p.N * oh * ow));
  }
}

const Conv2dParams kShapes[] = {
    make(2, 3, 9, 7, 5, 3, 1, 1, 1, 1),   // 3x3 pad 1, odd sizes
    make(2, 4, 11, 10, 6, 3, 2, 1, 1, 1),  // stride 2
    make(3, 8, 5, 6, 7, 1, 1, 0, 1, 1),   // 1x1
    make(1, 3, 12, 9, 4, 3, 1, 2, 2, 1),  // dilation 2
    make(2, 6, 8, 7, 4, 3, 1, 1, 1, 2),   // groups 2
    make(2, 5, 9, 8, 5, 3, 2, 1, 1, 5),   // depthwise: the direct kernels
};

}  // namespace

TEMPLATE_TEST_CASE("cuda conv: forward and both backwards vs the CPU", "[cuda]", float, double,
                   Half, BFloat16) {
  std::uint32_t seed = 10;
  for (const Conv2dParams& p : kShapes)
    for (bool with_bias : {false, true}) {
      INFO("N=" << p.N << " C=" << p.C << " H=" << p.H << " W=" << p.W << " O=" << p.O
                << " k=" << p.kH << " stride=" << p.stride_h << " pad=" << p.pad_h
                << " dilation=" << p.dilation_h << " groups=" << p.groups
                << " bias=" << with_bias);
      check_all<TestType>(p, with_bias, seed += 10);
    }
}

TEST_CASE("cuda conv: depthwise needs no workspace", "[cuda]") {
  const Conv2dParams p = make(2, 5, 9, 8, 5, 3, 2, 1, 1, 5);
  CHECK(kernels::cuda::conv2d_forward_workspace_bytes<float>(p, 1) == 0);
  CHECK(kernels::cuda::conv2d_backward_input_workspace_bytes<float>(p, 1) == 0);
  CHECK(kernels::cuda::conv2d_backward_weight_workspace_bytes<float>(p, 1) == 0);
}

TEST_CASE("cuda conv: N = 0 does nothing, and zeroes the weight gradients", "[cuda]") {
  const Conv2dParams p = make(0, 3, 8, 8, 4, 3, 1, 1, 1, 1);
  CHECK(kernels::cuda::conv2d_forward_workspace_bytes<float>(p, 1) == 0);
  kernels::cuda::conv2d_forward<float>(p, nullptr, nullptr, nullptr, nullptr, nullptr, 0);
  kernels::cuda::conv2d_backward_input<float>(p, nullptr, nullptr, nullptr, nullptr, 0);
  DeviceBuffer<float> gw(random_values<float>(4 * 3 * 9, 1)), gb(random_values<float>(4, 2));
  kernels::cuda::conv2d_backward_weight<float>(p, nullptr, nullptr, gw.get(), gb.get(), nullptr, 0);
  for (float v : gw.download()) CHECK(v == 0.0f);
  for (float v : gb.download()) CHECK(v == 0.0f);
}

TEST_CASE("cuda conv: a too-small workspace throws, bad params throw", "[cuda]") {
  // Over the shapes and types, find workspaces cuDNN wants, and hand each one byte less.
  int checked = 0;
  for (const Conv2dParams& p : kShapes) {
    const std::int64_t in_n = p.N * p.C * p.H * p.W, out_n = p.N * p.O * p.out_h() * p.out_w();
    DeviceBuffer<float> x(sz(in_n)), y(sz(out_n)), w(sz(p.O * (p.C / p.groups) * p.kH * p.kW));
    const std::size_t f = kernels::cuda::conv2d_forward_workspace_bytes<float>(p, 1);
    const std::size_t bi = kernels::cuda::conv2d_backward_input_workspace_bytes<float>(p, 1);
    const std::size_t bw = kernels::cuda::conv2d_backward_weight_workspace_bytes<float>(p, 1);
    DeviceBuffer<unsigned char> ws(std::max({f, bi, bw}));
    if (f > 0) {
      CHECK_THROWS_AS(kernels::cuda::conv2d_forward<float>(p, x.get(), w.get(), nullptr, y.get(),
                                                           ws.get(), f - 1),
                      Error);
      ++checked;
    }
    if (bi > 0) {
      CHECK_THROWS_AS(kernels::cuda::conv2d_backward_input<float>(p, y.get(), w.get(), x.get(),
                                                                  ws.get(), bi - 1),
                      Error);
      ++checked;
    }
    if (bw > 0) {
      CHECK_THROWS_AS(kernels::cuda::conv2d_backward_weight<float>(p, y.get(), x.get(), w.get(),
                                                                   nullptr, ws.get(), bw - 1),
                      Error);
      ++checked;
    }
  }
  if (checked == 0) WARN("cuDNN chose workspace-free algorithms for every shape on this GPU");
  Conv2dParams bad = make(1, 3, 8, 8, 4, 3, 1, 1, 1, 2);  // 3 channels in 2 groups
  CHECK_THROWS_AS(kernels::cuda::conv2d_forward_workspace_bytes<float>(bad, 1), Error);
  CHECK_THROWS_AS(
      kernels::cuda::conv2d_forward<float>(bad, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
      Error);
}
