// Mixed-precision loss scaling on CUDA gradients against the CPU: the fused unscale kernel
// (kernels::cuda::non_finite_check_and_unscale), the engine op over a list of gradients, and
// amp::GradScaler driving a model on the GPU — unscaled gradients, the step, and the step
// skipped when a gradient holds inf or NaN.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/ops/amp.h"
#include "kernels/cpu/optim.h"
#include "kernels/cuda/optim.h"
#include "nn/nn.h"
#include "tests/cuda/device_buffer.h"
#include "tests/cuda/tensor_compare.h"

using namespace frugal;
using Catch::Matchers::Contains;
using frugal::test::bitwise_equal;
using frugal::test::DeviceBuffer;
using frugal::test::kGpu;
using frugal::test::max_relative_difference;
using frugal::test::random_values;

namespace {

// Bit for bit, NaN only where the reference has NaN (its payload may differ).
template <class T>
void require_same(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
    if (!ok) {
      INFO(what << ": element " << i << " is " << got[i] << ", the CPU's " << want[i]);
      REQUIRE(ok);
    }
  }
}

// Runs the CPU and the CUDA kernel on the same gradient (with `poison` written at the given
// indices) and the same starting flag; the unscaled values and the flags must agree exactly:
// both multiply by the same T(inv_scale), one rounding each.
template <class T>
void check_unscale(std::size_t n, float inv_scale, const std::vector<std::size_t>& poisoned,
                   T poison, float flag_before) {
  INFO(test::type_name(T()) << " n " << n << ", " << poisoned.size() << " poisoned, flag before "
                            << flag_before);
  auto grad = random_values<T>(n, 7, -1e4, 1e4);
  for (std::size_t i : poisoned) grad[i] = poison;
  DeviceBuffer<T> d_grad(grad);
  DeviceBuffer<float> d_flag(std::vector<float>{flag_before});
  float flag = flag_before;
  kernels::cpu::non_finite_check_and_unscale(grad.data(), static_cast<std::int64_t>(n), inv_scale,
                                             &flag);
  kernels::cuda::non_finite_check_and_unscale(d_grad.get(), static_cast<std::int64_t>(n), inv_scale,
                                              d_flag.get());
  require_same(d_grad.download(), grad, "unscaled gradient");
  const float got_flag = d_flag.download()[0];
  CHECK(got_flag == flag);
  CHECK(got_flag == ((poisoned.empty() && flag_before == 0.0f) ? 0.0f : 1.0f));
}

}  // namespace

TEMPLATE_TEST_CASE("cuda amp: non_finite_check_and_unscale matches the CPU bit for bit",
                   "[cuda][amp]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const float inv = static_cast<float>(1.0 / 65536.0), odd = 1.0f / 3.0f;  // odd: rounds when cast
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{(1 << 20) + 3}}) {
    check_unscale<T>(n, inv, {}, T(0), 0.0f);  // clean: the flag stays 0
    check_unscale<T>(n, odd, {}, T(0), 0.0f);
    check_unscale<T>(n, inv, {n - 1}, inf, 0.0f);  // the last element, past the first blocks
    check_unscale<T>(n, inv, {0}, -inf, 0.0f);
    check_unscale<T>(n, odd, {n / 2}, nan, 0.0f);
    check_unscale<T>(n, inv, {}, T(0), 1.0f);  // never reset by a clean pass
  }
  // Finite values that overflow when unscaled by a factor > 1 are not "found": the check reads
  // the value before it is scaled, as PyTorch's does.
  check_unscale<T>(1000, 1e36f, {}, T(0), 0.0f);  // float: 1e4 * 1e36 overflows to inf
  // Zero elements: nothing launched, the flag untouched.
  DeviceBuffer<float> flag(std::vector<float>{0.0f});
  kernels::cuda::non_finite_check_and_unscale<T>(nullptr, 0, inv, flag.get());
  CHECK(flag.download()[0] == 0.0f);
}

TEST_CASE("cuda amp: amp_non_finite_check_and_unscale_ over CUDA gradients matches the CPU",
          "[cuda][amp]") {
  manual_seed(21);
  const std::vector<Tensor> cpu_grads = {mul(randn({300, 17}), 4096.0),
                                         mul(randn({5}, kFloat64), 4096.0),
                                         mul(randn({1 << 16}), 4096.0)};
  std::vector<Tensor> gpu_grads;
  for (const Tensor& g : cpu_grads) gpu_grads.push_back(g.cuda());
  gpu_grads.push_back(Tensor());  // undefined gradients are skipped
  std::vector<Tensor> cpu_list = cpu_grads;
  cpu_list.push_back(Tensor());

  Tensor cpu_found = zeros({1});
  Tensor gpu_found = zeros({1}, TensorOptions().device(kGpu));
  amp_non_finite_check_and_unscale_(cpu_list, cpu_found, 1.0 / 4096.0);
  amp_non_finite_check_and_unscale_(gpu_grads, gpu_found, 1.0 / 4096.0);
  CHECK(gpu_found.item<float>() == 0.0f);
  CHECK(cpu_found.item<float>() == 0.0f);
  for (std::size_t i = 0; i < cpu_grads.size(); ++i) {
    INFO("gradient " << i);
    CHECK(gpu_grads[i].is_cuda());
    CHECK(bitwise_equal(gpu_grads[i], cpu_grads[i]));
  }

  // A NaN in the float64 gradient sets the flag; the others are still unscaled.
  Tensor(gpu_grads[1]).narrow(0, 2, 1).fill_(std::nan(""));
  Tensor(cpu_grads[1]).narrow(0, 2, 1).fill_(std::nan(""));
  amp_non_finite_check_and_unscale_(cpu_list, cpu_found, 0.5);
  amp_non_finite_check_and_unscale_(gpu_grads, gpu_found, 0.5);
  CHECK(gpu_found.item<float>() == 1.0f);
  CHECK(cpu_found.item<float>() == 1.0f);
  for (std::size_t i = 0; i < cpu_grads.size(); ++i)
    CHECK(max_relative_difference(gpu_grads[i], cpu_grads[i]) == 0);

  // Bad input names what is wrong.
  Tensor found_on_cpu = zeros({1});
  CHECK_THROWS_WITH(amp_non_finite_check_and_unscale_({gpu_grads[0]}, found_on_cpu, 1.0),
                    Contains("cuda:0") && Contains("cpu"));
  CHECK_THROWS_WITH(amp_non_finite_check_and_unscale_({gpu_grads[0].t()}, gpu_found, 1.0),
                    Contains("contiguous"));
  CHECK_THROWS_WITH(amp_non_finite_check_and_unscale_({gpu_grads[0].to(kFloat16)}, gpu_found, 1.0),
                    Contains("float16"));
}

namespace {

// The same mlp on the CPU and on the GPU (the same initial weights), one batch, SGD with
// momentum on each.
struct TwinModels {
  std::shared_ptr<nn::Sequential> cpu, gpu;
  Tensor images, labels;
  TwinModels() {
    manual_seed(5);
    cpu = nn::make_model("mlp");
    manual_seed(5);
    gpu = nn::make_model("mlp");
    gpu->to(kGpu);
    images = randn({16, 1, 28, 28});
    labels = randint(0, 10, {16}, kInt64);
  }
  Tensor loss_cpu() const { return cross_entropy(cpu->forward(images), labels); }
  Tensor loss_gpu() const { return cross_entropy(gpu->forward(images.cuda()), labels.cuda()); }
};

}  // namespace

TEST_CASE("cuda amp: GradScaler's unscaled CUDA gradients and step match the CPU's",
          "[cuda][amp]") {
  TwinModels m;
  // The plain gradients on the GPU, for the check that scaling by a power of two and
  // unscaling again changes no bit.
  m.loss_gpu().backward();
  nn::NamedTensors plain;
  for (const auto& [name, p] : m.gpu->named_parameters())
    plain.emplace_back(name, p.grad().clone());
  m.gpu->zero_grad();

  optim::SGD cpu_sgd(m.cpu->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  optim::SGD gpu_sgd(m.gpu->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler cpu_scaler(amp::GradScalerOptions{.init_scale = 1024, .growth_interval = 2});
  amp::GradScaler gpu_scaler(amp::GradScalerOptions{.init_scale = 1024, .growth_interval = 2});
  for (int step = 0; step < 2; ++step) {
    INFO("step " << step);
    cpu_sgd.zero_grad();
    gpu_sgd.zero_grad();
    const Tensor scaled_gpu = gpu_scaler.scale(m.loss_gpu());
    CHECK(scaled_gpu.is_cuda());
    scaled_gpu.backward();
    cpu_scaler.scale(m.loss_cpu()).backward();
    gpu_scaler.unscale_(gpu_sgd);
    cpu_scaler.unscale_(cpu_sgd);
    const auto cpu_params = m.cpu->named_parameters(), gpu_params = m.gpu->named_parameters();
    for (std::size_t i = 0; i < cpu_params.size(); ++i) {
      INFO(cpu_params[i].first);
      const Tensor& g = gpu_params[i].second.grad();
      REQUIRE(g.is_cuda());
      CHECK(max_relative_difference(g, cpu_params[i].second.grad()) < 1e-4);
      if (step == 0) CHECK(bitwise_equal(g, plain[i].second));
    }
    CHECK(gpu_scaler.step(gpu_sgd));
    CHECK(cpu_scaler.step(cpu_sgd));
    gpu_scaler.update();
    cpu_scaler.update();
    CHECK(gpu_scaler.get_scale() == cpu_scaler.get_scale());
    for (std::size_t i = 0; i < cpu_params.size(); ++i) {
      INFO(cpu_params[i].first);
      CHECK(max_relative_difference(gpu_params[i].second, cpu_params[i].second) < 1e-4);
    }
  }
  CHECK(gpu_scaler.get_scale() == 2048.0);  // two clean steps at growth_interval 2
}

TEST_CASE("cuda amp: an inf or NaN in one CUDA gradient skips the step and backs the scale off",
          "[cuda][amp]") {
  for (const double poison : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    INFO("poison " << poison);
    TwinModels m;
    optim::SGD sgd(m.gpu->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    amp::GradScaler scaler(amp::GradScalerOptions{.init_scale = 256});
    // A clean step first, so the momentum buffers exist and can be seen not to move.
    scaler.scale(m.loss_gpu()).backward();
    REQUIRE(scaler.step(sgd));
    scaler.update();
    nn::NamedTensors params_before, state_before;
    for (const auto& [name, p] : m.gpu->named_parameters())
      params_before.emplace_back(name, p.clone());
    for (const auto& [name, t] : sgd.state_dict()) state_before.emplace_back(name, t.clone());

    sgd.zero_grad();
    scaler.scale(m.loss_gpu()).backward();
    // One element of the last layer's bias gradient, on the device.
    Tensor g = m.gpu->parameters().back().grad();
    REQUIRE(g.is_cuda());
    g.view({-1}).narrow(0, 3, 1).fill_(poison);
    CHECK_FALSE(scaler.step(sgd));
    scaler.update();
    CHECK(scaler.get_scale() == 128.0);
    CHECK(scaler.growth_tracker() == 0);
    const auto params_after = m.gpu->named_parameters();
    for (std::size_t i = 0; i < params_after.size(); ++i) {
      INFO(params_after[i].first);
      CHECK(bitwise_equal(params_after[i].second, params_before[i].second));
    }
    const auto state_after = sgd.state_dict();
    REQUIRE(state_after.size() == state_before.size());
    for (std::size_t i = 0; i < state_after.size(); ++i)
      CHECK(bitwise_equal(state_after[i].second, state_before[i].second));

    // The next clean iteration steps again, at the backed-off scale.
    sgd.zero_grad();
    scaler.scale(m.loss_gpu()).backward();
    CHECK(scaler.step(sgd));
    scaler.update();
    CHECK_FALSE(bitwise_equal(m.gpu->parameters().front(), params_before.front().second));
  }
}
