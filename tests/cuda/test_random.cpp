// The CUDA random fills and dropout's masked scaling against their CPU reference: uniform and
// bernoulli bit for bit, normal within rounding, odd lengths, offsets and n = 0.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/dropout.h"
#include "kernels/cpu/random.h"
#include "kernels/cuda/dropout.h"
#include "kernels/cuda/random.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using frugal::test::DeviceBuffer;
using frugal::test::random_values;
using frugal::test::require_close;
namespace cpu = frugal::kernels::cpu;
namespace gpu = frugal::kernels::cuda;

namespace {

const std::vector<std::int64_t> kLengths = {0, 1, 2, 7, 1000, 65537};
const std::vector<std::uint64_t> kOffsets = {0, 3, (std::uint64_t{1} << 32) - 1};
constexpr std::uint64_t kSeed = 0x1234'5678'9abc'def0ull;

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
void check_uniform(double lo, double hi) {
  for (auto n : kLengths) {
    for (auto offset : kOffsets) {
      std::vector<T> want(static_cast<std::size_t>(n));
      cpu::uniform<T>(want.data(), n, kSeed, offset, lo, hi);
      DeviceBuffer<T> d_out(want.size());
      gpu::uniform<T>(d_out.get(), n, kSeed, offset, lo, hi);
      const auto got = d_out.download();
      INFO("uniform n " << n << " offset " << offset);
      REQUIRE(same_bits(got, want));
      for (const T& v : got) {
        REQUIRE(static_cast<double>(v) >= lo);
        REQUIRE(static_cast<double>(v) < hi);
      }
    }
  }
}

template <class T>
void check_normal(double mean, double std) {
  for (auto n : kLengths) {
    for (auto offset : kOffsets) {
      std::vector<T> want(static_cast<std::size_t>(n));
      cpu::normal<T>(want.data(), n, kSeed, offset, mean, std);
      DeviceBuffer<T> d_out(want.size());
      gpu::normal<T>(d_out.get(), n, kSeed, offset, mean, std);
      // CUDA's log1p/sincos may differ from glibc's by an ulp of double; after rounding to
      // T that is at most one unit of T's rounding (scale 4 gives room near large |z|).
      require_close(d_out.download(), want, "normal n " + std::to_string(n), 4.0);
    }
  }
}

}  // namespace

TEST_CASE("cuda random: uniform matches the CPU bit for bit", "[cuda]") {
  check_uniform<float>(-1, 1);
  check_uniform<double>(-3, 5);
  check_uniform<Half>(0, 1);
  check_uniform<BFloat16>(-2, 2);
  check_uniform<float>(1, 1.0000001);  // rounding onto hi, which must stay excluded
}

TEST_CASE("cuda random: normal matches the CPU within rounding", "[cuda]") {
  check_normal<float>(0, 1);
  check_normal<double>(2, 0.5);
  check_normal<Half>(-1, 3);
  check_normal<BFloat16>(0, 1);
}

TEST_CASE("cuda random: bernoulli matches the CPU bit for bit", "[cuda]") {
  for (double keep : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    for (auto n : kLengths) {
      for (auto offset : kOffsets) {
        std::vector<std::uint8_t> want(static_cast<std::size_t>(n));
        cpu::bernoulli(want.data(), n, kSeed, offset, keep);
        DeviceBuffer<std::uint8_t> d_mask(want.size());
        gpu::bernoulli(d_mask.get(), n, kSeed, offset, keep);
        INFO("bernoulli keep " << keep << " n " << n << " offset " << offset);
        REQUIRE(same_bits(d_mask.download(), want));
      }
    }
  }
}

template <class T>
void check_masked_scale(bool in_place) {
  for (auto n : kLengths) {
    const auto size = static_cast<std::size_t>(n);
    auto x = random_values<T>(size, 61);
    std::vector<std::uint8_t> mask(size);
    cpu::bernoulli(mask.data(), n, kSeed, 0, 0.7);
    std::vector<T> want(size);
    cpu::masked_scale<T>(x.data(), mask.data(), 1 / 0.7, want.data(), n);
    DeviceBuffer<T> d_x(x), d_out(size);
    DeviceBuffer<std::uint8_t> d_mask(mask);
    T* out = in_place ? d_x.get() : d_out.get();
    gpu::masked_scale<T>(d_x.get(), d_mask.get(), 1 / 0.7, out, n);
    require_close(
        in_place ? d_x.download() : d_out.download(), want,
        std::string("masked_scale n ") + std::to_string(n) + (in_place ? " in place" : ""));
  }
}

TEST_CASE("cuda dropout: masked_scale", "[cuda]") {
  for (bool in_place : {false, true}) {
    check_masked_scale<float>(in_place);
    check_masked_scale<double>(in_place);
    check_masked_scale<Half>(in_place);
    check_masked_scale<BFloat16>(in_place);
  }
}
