// Pool2dParams' output size and the pooling parameter checks: one definition each, shared by
// every level's copy of the pooling kernels (pool.cpp).
#include <cstdint>
#include <string>

#include "common/error.h"
#include "kernels/cpu/pool.h"

namespace frugal::kernels::cpu {

namespace {

std::int64_t pool_out(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad,
                      std::int64_t dilation, bool ceil_mode) {
  const std::int64_t span = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  std::int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

std::string describe(const Pool2dParams& p) {
  auto s = [](std::int64_t v) { return std::to_string(v); };
  return "input [" + s(p.N) + ", " + s(p.C) + ", " + s(p.H) + ", " + s(p.W) + "], kernel " +
         s(p.kH) + "x" + s(p.kW) + ", stride " + s(p.stride_h) + "x" + s(p.stride_w) +
         ", padding " + s(p.pad_h) + "x" + s(p.pad_w) + ", dilation " + s(p.dilation_h) + "x" +
         s(p.dilation_w) + (p.ceil_mode ? ", ceil_mode" : "");
}

}  // namespace

std::int64_t Pool2dParams::out_h() const {
  return pool_out(H, kH, stride_h, pad_h, dilation_h, ceil_mode);
}
std::int64_t Pool2dParams::out_w() const {
  return pool_out(W, kW, stride_w, pad_w, dilation_w, ceil_mode);
}

void validate_pool2d(const Pool2dParams& p, bool average) {
  const char* problem = nullptr;
  if (p.N < 0 || p.C < 1 || p.H < 1 || p.W < 1) {
    problem = "sizes must be at least 1 (the batch may be 0)";
  } else if (p.kH < 1 || p.kW < 1 || p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 ||
             p.dilation_w < 1) {
    problem = "kernel, stride and dilation must be at least 1";
  } else if (average && (p.dilation_h != 1 || p.dilation_w != 1)) {
    problem = "average pooling has no dilation";
  } else if (p.pad_h < 0 || p.pad_w < 0 || p.pad_h > p.kH / 2 || p.pad_w > p.kW / 2) {
    problem = "padding must be between 0 and half the kernel size";
  } else if (p.out_h() < 1 || p.out_w() < 1) {
    problem = "the output would be empty (kernel larger than the padded input)";
  }
  FRUGAL_CHECK(problem == nullptr, std::string(average ? "avg_pool2d: " : "max_pool2d: ") +
                                       (problem ? problem : "") + " (" + describe(p) + ")");
}

void validate_adaptive_pool2d(const AdaptivePool2dParams& p) {
  FRUGAL_CHECK(p.N >= 0 && p.C >= 1 && p.H >= 1 && p.W >= 1 && p.out_h >= 1 && p.out_w >= 1,
               "adaptive_avg_pool2d: sizes must be at least 1 (the batch may be 0): input [" +
                   std::to_string(p.N) + ", " + std::to_string(p.C) + ", " + std::to_string(p.H) +
                   ", " + std::to_string(p.W) + "], output " + std::to_string(p.out_h) + "x" +
                   std::to_string(p.out_w));
}

}  // namespace frugal::kernels::cpu
