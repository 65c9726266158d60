// Conv2dParams' output size and validation, and the threading threshold that every level's
// copy of the conv kernels reads: one definition each, shared by all copies.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "kernels/cpu/conv.h"

namespace frugal::kernels::cpu {

namespace {

std::string describe(const Conv2dParams& p) {
  auto s = [](std::int64_t v) { return std::to_string(v); };
  return "input [" + s(p.N) + ", " + s(p.C) + ", " + s(p.H) + ", " + s(p.W) + "], " + s(p.O) +
         " output channels, kernel " + s(p.kH) + "x" + s(p.kW) + ", stride " + s(p.stride_h) + "x" +
         s(p.stride_w) + ", padding " + s(p.pad_h) + "x" + s(p.pad_w) + ", dilation " +
         s(p.dilation_h) + "x" + s(p.dilation_w) + ", groups " + s(p.groups);
}

std::int64_t out_size(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad,
                      std::int64_t dilation) {
  const std::int64_t span = in + 2 * pad - dilation * (k - 1) - 1;
  // Floor division, so that a kernel wider than the padded input gives a size below 1.
  return (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
}

}  // namespace

std::int64_t Conv2dParams::out_h() const { return out_size(H, kH, stride_h, pad_h, dilation_h); }
std::int64_t Conv2dParams::out_w() const { return out_size(W, kW, stride_w, pad_w, dilation_w); }

void validate_conv2d(const Conv2dParams& p) {
  const char* problem = nullptr;
  if (p.N < 0 || p.C < 1 || p.H < 1 || p.W < 1 || p.O < 1) {
    problem = "sizes must be at least 1 (the batch may be 0)";
  } else if (p.kH < 1 || p.kW < 1) {
    problem = "the kernel must be at least 1x1";
  } else if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1) {
    problem = "stride and dilation must be at least 1";
  } else if (p.pad_h < 0 || p.pad_w < 0) {
    problem = "padding must not be negative";
  } else if (p.groups < 1 || p.C % p.groups != 0 || p.O % p.groups != 0) {
    problem = "groups must divide both input and output channels";
  } else if (p.out_h() < 1 || p.out_w() < 1) {
    problem = "the (dilated) kernel is larger than the padded input";
  }
  FRUGAL_CHECK(problem == nullptr,
               std::string("conv2d: ") + (problem ? problem : "") + " (" + describe(p) + ")");
}

namespace {
std::atomic<std::int64_t> min_work_per_thread{std::int64_t{1} << 16};
}  // namespace

void set_conv_min_work_per_thread(std::int64_t macs) {
  min_work_per_thread = std::max<std::int64_t>(1, macs);
}
std::int64_t conv_min_work_per_thread() { return min_work_per_thread; }

}  // namespace frugal::kernels::cpu
