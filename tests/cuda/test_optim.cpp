// kernels/cuda/optim against the CPU reference: SGD (plain, momentum first and later steps,
// nesterov, weight decay) and AdamW over several steps, float and double.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "kernels/cpu/optim.h"
#include "kernels/cuda/optim.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using namespace frugal::test;

namespace {

constexpr std::size_t kN = 10007;  // not a multiple of the block size

template <class T>
void check_sgd(double momentum, double dampening, double weight_decay, bool nesterov) {
  auto param = random_values<T>(kN, 1);
  std::vector<T> buf(kN, T(0));
  DeviceBuffer<T> dparam(param), dbuf(buf);
  for (int step = 0; step < 3; ++step) {
    const auto grad = random_values<T>(kN, 10 + step);
    DeviceBuffer<T> dgrad(grad);
    const bool first = step == 0;
    kernels::cpu::sgd_step(param.data(), grad.data(), momentum != 0 ? buf.data() : nullptr,
                           static_cast<std::int64_t>(kN), 0.1, momentum, dampening, weight_decay,
                           nesterov, first);
    kernels::cuda::sgd_step(dparam.get(), dgrad.get(), momentum != 0 ? dbuf.get() : nullptr,
                            static_cast<std::int64_t>(kN), 0.1, momentum, dampening, weight_decay,
                            nesterov, first);
    require_close(dparam.download(), param, "sgd param");
    if (momentum != 0) require_close(dbuf.download(), buf, "sgd momentum buffer");
  }
}

template <class T>
void check_adamw(double weight_decay) {
  auto param = random_values<T>(kN, 2);
  std::vector<T> m(kN, T(0)), v(kN, T(0));
  DeviceBuffer<T> dparam(param), dm(m), dv(v);
  for (std::int64_t step = 1; step <= 4; ++step) {
    const auto grad = random_values<T>(kN, 20 + static_cast<std::uint32_t>(step));
    DeviceBuffer<T> dgrad(grad);
    kernels::cpu::adamw_step(param.data(), grad.data(), m.data(), v.data(),
                             static_cast<std::int64_t>(kN), 1e-3, 0.9, 0.999, 1e-8, weight_decay,
                             step);
    kernels::cuda::adamw_step(dparam.get(), dgrad.get(), dm.get(), dv.get(),
                              static_cast<std::int64_t>(kN), 1e-3, 0.9, 0.999, 1e-8, weight_decay,
                              step);
    require_close(dparam.download(), param, "adamw param");
    require_close(dm.download(), m, "adamw exp_avg");
    require_close(dv.download(), v, "adamw exp_avg_sq");
  }
}

}  // namespace

TEMPLATE_TEST_CASE("cuda sgd_step matches the CPU", "[cuda][optim]", float, double) {
  check_sgd<TestType>(0, 0, 0, false);
  check_sgd<TestType>(0.9, 0, 0, false);
  check_sgd<TestType>(0.9, 0.1, 5e-4, false);
  check_sgd<TestType>(0.9, 0, 1e-4, true);
}

TEMPLATE_TEST_CASE("cuda adamw_step matches the CPU", "[cuda][optim]", float, double) {
  check_adamw<TestType>(0);
  check_adamw<TestType>(0.01);
}

TEST_CASE("cuda optimizer steps on zero elements do nothing", "[cuda][optim]") {
  kernels::cuda::sgd_step<float>(nullptr, nullptr, nullptr, 0, 0.1, 0.9, 0, 0, false, true);
  kernels::cuda::adamw_step<float>(nullptr, nullptr, nullptr, nullptr, 0, 1e-3, 0.9, 0.999, 1e-8, 0,
                                   1);
  SUCCEED("no launch, no error");
}
