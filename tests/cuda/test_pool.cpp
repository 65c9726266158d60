// kernels/cuda/pool against the CPU reference on random inputs: max pooling (2x2/2, 3x3/2 pad 1,
// dilation, ceil mode; int64 and compact indices), average pooling with and without the padding
// counted, adaptive average pooling (global and uneven windows), forward and backward.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "kernels/cpu/pool.h"
#include "kernels/cuda/pool.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using namespace frugal::test;
using kernels::cpu::AdaptivePool2dParams;
using kernels::cpu::Pool2dParams;

namespace {

Pool2dParams make(std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                  bool ceil_mode, bool include_pad = true) {
  Pool2dParams p;
  p.N = 2, p.C = 3, p.H = 9, p.W = 11;
  p.kH = p.kW = k;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dilation;
  p.ceil_mode = ceil_mode;
  p.count_include_pad = include_pad;
  return p;
}

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }

template <class T>
void check_max(const Pool2dParams& p) {
  namespace cpu = kernels::cpu;
  namespace cu = kernels::cuda;
  const std::size_t in_n = sz(p.N * p.C * p.H * p.W), out_n = sz(p.N * p.C * p.out_h() * p.out_w());
  const auto x = random_values<T>(in_n, 3);
  const auto gy = random_values<T>(out_n, 4);
  DeviceBuffer<T> dx(x), dgy(gy), dy(out_n), dgx(in_n);
  DeviceBuffer<std::int64_t> didx(out_n);

  std::vector<T> y(out_n), gx(in_n);
  std::vector<std::int64_t> idx(out_n);
  cpu::max_pool2d_forward(p, x.data(), y.data(), idx.data());
  cu::max_pool2d_forward(p, dx.get(), dy.get(), didx.get());
  require_close(dy.download(), y, "max forward");
  REQUIRE(didx.download() == idx);
  cpu::max_pool2d_backward(p, gy.data(), idx.data(), gx.data());
  cu::max_pool2d_backward(p, dgy.get(), didx.get(), dgx.get());
  require_close(dgx.download(), gx, "max backward");

  if (p.kH * p.kW <= 256) {
    DeviceBuffer<std::uint8_t> dcompact(out_n);
    std::vector<std::uint8_t> compact(out_n);
    cpu::max_pool2d_forward_compact(p, x.data(), y.data(), compact.data());
    cu::max_pool2d_forward_compact(p, dx.get(), dy.get(), dcompact.get());
    REQUIRE(dcompact.download() == compact);
    cpu::max_pool2d_backward_compact(p, gy.data(), compact.data(), gx.data());
    cu::max_pool2d_backward_compact(p, dgy.get(), dcompact.get(), dgx.get());
    require_close(dgx.download(), gx, "max backward (compact indices)");
  }
}

template <class T>
void check_avg(const Pool2dParams& p) {
  namespace cpu = kernels::cpu;
  namespace cu = kernels::cuda;
  const std::size_t in_n = sz(p.N * p.C * p.H * p.W), out_n = sz(p.N * p.C * p.out_h() * p.out_w());
  const auto x = random_values<T>(in_n, 5);
  const auto gy = random_values<T>(out_n, 6);
  DeviceBuffer<T> dx(x), dgy(gy), dy(out_n), dgx(in_n);
  std::vector<T> y(out_n), gx(in_n);
  cpu::avg_pool2d_forward(p, x.data(), y.data());
  cu::avg_pool2d_forward(p, dx.get(), dy.get());
  require_close(dy.download(), y, "avg forward", 4);
  cpu::avg_pool2d_backward(p, gy.data(), gx.data());
  cu::avg_pool2d_backward(p, dgy.get(), dgx.get());
  require_close(dgx.download(), gx, "avg backward", 4);
}

template <class T>
void check_adaptive(std::int64_t out_h, std::int64_t out_w) {
  namespace cpu = kernels::cpu;
  namespace cu = kernels::cuda;
  AdaptivePool2dParams p;
  p.N = 2, p.C = 5, p.H = 7, p.W = 10, p.out_h = out_h, p.out_w = out_w;
  const std::size_t in_n = sz(p.N * p.C * p.H * p.W), out_n = sz(p.N * p.C * out_h * out_w);
  const auto x = random_values<T>(in_n, 7);
  const auto gy = random_values<T>(out_n, 8);
  DeviceBuffer<T> dx(x), dgy(gy), dy(out_n), dgx(in_n);
  std::vector<T> y(out_n), gx(in_n);
  cpu::adaptive_avg_pool2d_forward(p, x.data(), y.data());
  cu::adaptive_avg_pool2d_forward(p, dx.get(), dy.get());
  require_close(dy.download(), y, "adaptive forward", 8);
  cpu::adaptive_avg_pool2d_backward(p, gy.data(), gx.data());
  cu::adaptive_avg_pool2d_backward(p, dgy.get(), dgx.get());
  require_close(dgx.download(), gx, "adaptive backward", 8);
}

}  // namespace

TEMPLATE_TEST_CASE("cuda max pooling matches the CPU", "[cuda][pool]", float, double, Half,
                   BFloat16) {
  check_max<TestType>(make(2, 2, 0, 1, false));
  check_max<TestType>(make(3, 2, 1, 1, false));
  check_max<TestType>(make(3, 2, 1, 1, true));
  check_max<TestType>(make(2, 1, 1, 2, false));
}

TEMPLATE_TEST_CASE("cuda average pooling matches the CPU", "[cuda][pool]", float, double, Half,
                   BFloat16) {
  check_avg<TestType>(make(2, 2, 0, 1, false));
  check_avg<TestType>(make(3, 2, 1, 1, false, true));
  check_avg<TestType>(make(3, 2, 1, 1, false, false));
  check_avg<TestType>(make(3, 2, 1, 1, true, false));
}

TEMPLATE_TEST_CASE("cuda adaptive average pooling matches the CPU", "[cuda][pool]", float, double,
                   Half, BFloat16) {
  check_adaptive<TestType>(1, 1);
  check_adaptive<TestType>(3, 4);
  check_adaptive<TestType>(7, 10);
}

TEST_CASE("cuda max pooling with NaN picks the NaN, as the CPU does", "[cuda][pool]") {
  Pool2dParams p = make(2, 2, 0, 1, false);
  auto x = random_values<float>(sz(p.N * p.C * p.H * p.W), 9);
  x[12] = std::nanf("");
  const std::size_t out_n = sz(p.N * p.C * p.out_h() * p.out_w());
  std::vector<float> y(out_n);
  std::vector<std::int64_t> idx(out_n);
  kernels::cpu::max_pool2d_forward(p, x.data(), y.data(), idx.data());
  DeviceBuffer<float> dx(x), dy(out_n);
  DeviceBuffer<std::int64_t> didx(out_n);
  kernels::cuda::max_pool2d_forward(p, dx.get(), dy.get(), didx.get());
  require_close(dy.download(), y, "max forward with NaN");
  REQUIRE(didx.download() == idx);
}

TEST_CASE("cuda pooling rejects impossible parameters before launching", "[cuda][pool]") {
  Pool2dParams p = make(2, 2, 0, 1, false);
  p.pad_h = 2;  // more than half the window
  DeviceBuffer<float> buf(1024);
  REQUIRE_THROWS_AS(kernels::cuda::max_pool2d_forward(p, buf.get(), buf.get(), nullptr), Error);
  Pool2dParams dilated = make(2, 2, 0, 2, false);
  REQUIRE_THROWS_AS(kernels::cuda::avg_pool2d_forward(dilated, buf.get(), buf.get()), Error);
}
