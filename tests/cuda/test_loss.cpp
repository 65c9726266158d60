// The CUDA nll_loss and cross-entropy against their CPU reference: every reduction, weights
// null and not, ignored rows, both ways of saving for the backward, every type, zero rows,
// and the bad-target error (thrown before any output is written).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/loss.h"
#include "kernels/cuda/loss.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using frugal::test::DeviceBuffer;
using frugal::test::random_values;
using frugal::test::require_close;
namespace cpu = frugal::kernels::cpu;
namespace gpu = frugal::kernels::cuda;

namespace {

const cpu::Reduction kReductions[] = {cpu::Reduction::None, cpu::Reduction::Mean,
                                      cpu::Reduction::Sum};

// Targets in [0, c), every fifth row (from the fourth) ignore_index.
std::vector<std::int64_t> make_targets(std::int64_t n, std::int64_t c, std::int64_t ignore,
                                       std::uint32_t seed) {
  const auto r = random_values<double>(static_cast<std::size_t>(n), seed, 0.0, 1.0);
  std::vector<std::int64_t> t(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    t[static_cast<std::size_t>(i)] =
        i % 5 == 3 ? ignore
                   : std::min<std::int64_t>(
                         c - 1, static_cast<std::int64_t>(r[static_cast<std::size_t>(i)] * c));
  return t;
}

template <class T>
void check_losses(std::int64_t n, std::int64_t c, std::int64_t ignore, bool weighted,
                  std::uint32_t seed) {
  const std::string what = std::string(test::type_name(T{})) + " [" + std::to_string(n) + ", " +
                           std::to_string(c) + "] weighted " + std::to_string(weighted);
  const std::size_t nc = static_cast<std::size_t>(n * c), rows = static_cast<std::size_t>(n);
  const auto x = random_values<T>(nc, seed, -4.0, 4.0);
  const auto w = random_values<T>(static_cast<std::size_t>(c), seed + 1, 0.2, 2.0);
  const auto target = make_targets(n, c, ignore, seed + 2);
  const DeviceBuffer<T> dx(x), dw(w);
  const DeviceBuffer<std::int64_t> dt(target);
  const T* wp = weighted ? w.data() : nullptr;
  const T* dwp = weighted ? dw.get() : nullptr;
  for (cpu::Reduction r : kReductions) {
    INFO(what << " reduction " << static_cast<int>(r));
    const std::size_t out_n = r == cpu::Reduction::None ? rows : 1;
    // nll_loss on x seen as log-probabilities.
    std::vector<T> out(out_n), tw(1);
    DeviceBuffer<T> dout(out_n), dtw(1);
    cpu::nll_loss_forward(x.data(), target.data(), wp, n, c, r, ignore, out.data(), tw.data());
    gpu::nll_loss_forward(dx.get(), dt.get(), dwp, n, c, r, ignore, dout.get(), dtw.get());
    require_close(dout.download(), out, what + " nll out", 4);
    require_close(dtw.download(), tw, what + " nll total_weight");
    const auto gy = random_values<T>(out_n, seed + 3, -2.0, 2.0);
    const DeviceBuffer<T> dgy(gy);
    std::vector<T> gx(nc);
    DeviceBuffer<T> dgx(nc);
    cpu::nll_loss_backward(gy.data(), target.data(), wp, n, c, r, ignore, tw.data(), gx.data());
    gpu::nll_loss_backward(dgy.get(), dt.get(), dwp, n, c, r, ignore, dtw.get(), dgx.get());
    require_close(dgx.download(), gx, what + " nll grad");
    // cross-entropy, saving both log_probs and row_lse.
    std::vector<T> lp(nc), lse(rows);
    DeviceBuffer<T> dlp(nc), dlse(rows);
    cpu::cross_entropy_forward(x.data(), target.data(), wp, n, c, r, ignore, out.data(), tw.data(),
                               lp.data(), lse.data());
    gpu::cross_entropy_forward(dx.get(), dt.get(), dwp, n, c, r, ignore, dout.get(), dtw.get(),
                               dlp.get(), dlse.get());
    require_close(dout.download(), out, what + " ce out", 4);
    require_close(dtw.download(), tw, what + " ce total_weight");
    require_close(dlp.download(), lp, what + " ce log_probs", 2);
    require_close(dlse.download(), lse, what + " ce row_lse", 2);
    // Backward from the logits + row_lse, and in place from log_probs.
    cpu::cross_entropy_backward(gy.data(), x.data(), lse.data(), target.data(), wp, n, c, r, ignore,
                                tw.data(), gx.data());
    gpu::cross_entropy_backward(dgy.get(), dx.get(), dlse.get(), dt.get(), dwp, n, c, r, ignore,
                                dtw.get(), dgx.get());
    require_close(dgx.download(), gx, what + " ce grad from logits", 4);
    cpu::cross_entropy_backward(gy.data(), lp.data(), static_cast<const T*>(nullptr), target.data(),
                                wp, n, c, r, ignore, tw.data(), gx.data());
    gpu::cross_entropy_backward(dgy.get(), dlp.get(), static_cast<const T*>(nullptr), dt.get(), dwp,
                                n, c, r, ignore, dtw.get(), dlp.get());
    require_close(dlp.download(), gx, what + " ce grad in place from log_probs", 4);
  }
}

template <class T>
void check_all_shapes() {
  std::uint32_t seed = 10;
  // Short rows (a warp each), a warp's most, long rows (a block each), many rows.
  for (auto [n, c] : {std::pair<std::int64_t, std::int64_t>{1, 1},
                      {13, 7},
                      {64, 300},
                      {5, 1024},
                      {4, 1500},
                      {3000, 10}})
    for (std::int64_t ignore : {cpu::kDefaultIgnoreIndex, std::int64_t{0}})
      for (bool weighted : {false, true}) check_losses<T>(n, c, ignore, weighted, seed++);
}

}  // namespace

TEST_CASE("cuda loss: float32 matches the CPU", "[cuda]") { check_all_shapes<float>(); }
TEST_CASE("cuda loss: float64 matches the CPU", "[cuda]") { check_all_shapes<double>(); }
TEST_CASE("cuda loss: float16 matches the CPU", "[cuda]") { check_all_shapes<Half>(); }
TEST_CASE("cuda loss: bfloat16 matches the CPU", "[cuda]") { check_all_shapes<BFloat16>(); }

TEST_CASE("cuda loss: zero rows write total_weight 0 and the reduced value", "[cuda]") {
  for (cpu::Reduction r : {cpu::Reduction::Mean, cpu::Reduction::Sum}) {
    float out = 1, tw = 1;
    cpu::nll_loss_forward<float>(nullptr, nullptr, nullptr, 0, 4, r, -100, &out, &tw);
    DeviceBuffer<float> dout(std::vector<float>{1}), dtw(std::vector<float>{1});
    gpu::nll_loss_forward<float>(nullptr, nullptr, nullptr, 0, 4, r, -100, dout.get(), dtw.get());
    require_close(dout.download(), {out}, "nll out");
    require_close(dtw.download(), {tw}, "nll total_weight");
    gpu::cross_entropy_forward<float>(nullptr, nullptr, nullptr, 0, 4, r, -100, dout.get(),
                                      dtw.get(), nullptr, nullptr);
    require_close(dout.download(), {out}, "ce out");
    require_close(dtw.download(), {tw}, "ce total_weight");
  }
}

TEST_CASE("cuda loss: a bad target throws naming it, before anything is written", "[cuda]") {
  const std::int64_t n = 6, c = 4;
  const std::vector<std::int64_t> target = {0, 3, -100, 7, 1, -5};  // first bad: 7 at 3
  const DeviceBuffer<std::int64_t> dt(target);
  const DeviceBuffer<float> dx(random_values<float>(n * c, 5));
  const std::vector<float> sentinel(n * c, 42.0f);
  DeviceBuffer<float> dout(sentinel), dtw(std::vector<float>{42.0f}), dlp(sentinel);
  auto expect_error = [&](auto&& call) {
    try {
      call();
      FAIL("no error thrown");
    } catch (const Error& e) {
      const std::string msg = e.what();
      CHECK(msg.find("target 7 at position 3") != std::string::npos);
    }
  };
  expect_error([&] {
    gpu::nll_loss_forward<float>(dx.get(), dt.get(), nullptr, n, c, cpu::Reduction::None, -100,
                                 dout.get(), dtw.get());
  });
  expect_error([&] {
    gpu::cross_entropy_forward<float>(dx.get(), dt.get(), nullptr, n, c, cpu::Reduction::Mean, -100,
                                      dout.get(), dtw.get(), dlp.get(), nullptr);
  });
  expect_error([&] {
    gpu::nll_loss_backward<float>(dx.get(), dt.get(), nullptr, n, c, cpu::Reduction::None, -100,
                                  dtw.get(), dlp.get());
  });
  expect_error([&] {
    gpu::cross_entropy_backward<float>(dx.get(), dx.get(), nullptr, dt.get(), nullptr, n, c,
                                       cpu::Reduction::Sum, -100, dtw.get(), dlp.get());
  });
  REQUIRE(dout.download() == sentinel);
  REQUIRE(dlp.download() == sentinel);
  REQUIRE(dtw.download() == std::vector<float>{42.0f});
  // And the CPU reference agrees on the message.
  std::vector<float> x(n * c), out(n), tw(1);
  CHECK_THROWS_WITH(cpu::nll_loss_forward(x.data(), target.data(), static_cast<float*>(nullptr), n,
                                          c, cpu::Reduction::None, -100, out.data(), tw.data()),
                    Catch::Contains("target 7 at position 3"));
}

TEST_CASE("cuda loss: more rows than one launch's grid covers", "[cuda]") {
  // The cross-entropy forward runs a warp per row, 8 rows per block, at most 65536 blocks:
  // 600001 rows take two passes of its row loop (and of the backward's element loop).
  check_losses<float>(600001, 3, cpu::kDefaultIgnoreIndex, true, 960);
}
