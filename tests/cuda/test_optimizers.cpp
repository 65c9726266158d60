// optim::SGD and optim::AdamW on CUDA parameters against the same optimizers on the CPU: several
// steps with every option in use, zero_grad, and state_dict moved between the devices (a
// checkpoint written on one resumed on the other) continuing exactly as if it had not moved.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nn/nn.h"
#include "tests/cuda/tensor_compare.h"

using namespace frugal;
using frugal::test::bitwise_equal;
using frugal::test::kGpu;
using frugal::test::max_relative_difference;

namespace {

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

// Parameters of several shapes, the same values on the CPU and the GPU: random, or those of
// `values` (wherever they live).
struct Params {
  std::vector<Tensor> cpu, gpu;
  explicit Params(const std::vector<Tensor>& values = {}) {
    Generator gen(41);
    const std::vector<std::vector<std::int64_t>> shapes = {{32, 17}, {17}, {8, 4, 3, 3}};
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const Tensor v = values.empty() ? randn(shapes[i], {}, &gen) : values[i].detach().cpu();
      cpu.push_back(v.clone().requires_grad_());
      gpu.push_back(v.cuda().requires_grad_());
    }
  }
  // The same gradients on both, drawn for `step`.
  void set_grads(int step) {
    Generator gen(100 + static_cast<std::uint64_t>(step));
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      const Tensor g = randn(cpu[i].sizes(), {}, &gen);
      cpu[i].mutable_grad() = g.clone();
      gpu[i].mutable_grad() = g.cuda();
    }
  }
  void check_close(const char* when) const {
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      INFO(when << ", parameter " << i);
      CHECK(gpu[i].is_cuda());
      CHECK(max_relative_difference(gpu[i], cpu[i]) < 1e-5);
    }
  }
};

// Steps both optimizers `steps` times from fresh gradients each, checking after each step.
void run_steps(Params& p, optim::Optimizer& cpu_opt, optim::Optimizer& gpu_opt, int first,
               int steps) {
  for (int s = first; s < first + steps; ++s) {
    p.set_grads(s);
    cpu_opt.step();
    gpu_opt.step();
    p.check_close(("step " + std::to_string(s)).c_str());
  }
}

void check_optimizer(const MakeOptimizer& make) {
  Params p;
  auto cpu_opt = make(p.cpu), gpu_opt = make(p.gpu);
  run_steps(p, *cpu_opt, *gpu_opt, 0, 3);

  // The GPU's state, saved (as a checkpoint holds it, on the CPU) and loaded into a fresh
  // optimizer on the GPU and into one on the CPU: both go on exactly as the originals.
  nn::NamedTensors saved;
  for (const auto& [name, t] : gpu_opt->state_dict()) saved.emplace_back(name, t.cpu());
  REQUIRE_FALSE(saved.empty());
  auto gpu_resumed = make(p.gpu);
  gpu_resumed->load_state_dict(saved);
  const auto reloaded = gpu_resumed->state_dict();
  REQUIRE(reloaded.size() == saved.size());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    INFO(saved[i].first);
    if (saved[i].second.dim() > 0)
      CHECK(reloaded[i].second.is_cuda());  // state lives beside its parameter
    CHECK(bitwise_equal(reloaded[i].second, saved[i].second));
  }
  // The CPU copy of the parameters continues from the GPU's state and values.
  Params q(p.gpu);
  auto cpu_resumed = make(q.cpu), gpu_resumed_q = make(q.gpu);
  cpu_resumed->load_state_dict(saved);
  gpu_resumed_q->load_state_dict(saved);
  run_steps(q, *cpu_resumed, *gpu_resumed_q, 3, 2);

  // zero_grad keeping the tensors: zeros on the device.
  gpu_opt->zero_grad(/*set_to_none=*/false);
  for (const Tensor& t : p.gpu) {
    REQUIRE(t.grad().defined());
    CHECK(t.grad().is_cuda());
    CHECK(bitwise_equal(t.grad(), zeros(t.sizes()).cuda()));
  }
  gpu_opt->zero_grad();
  for (const Tensor& t : p.gpu) CHECK_FALSE(t.grad().defined());
}

}  // namespace

TEST_CASE(
    "cuda optimizers: SGD with momentum, dampening, nesterov and weight decay matches the CPU",
    "[cuda][optim]") {
  check_optimizer([](std::vector<Tensor> params) {
    return std::make_unique<optim::SGD>(
        std::move(params), optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-3).nesterov(true));
  });
  check_optimizer([](std::vector<Tensor> params) {
    return std::make_unique<optim::SGD>(std::move(params),
                                        optim::SGDOptions(0.1).momentum(0.8).dampening(0.3));
  });
}

TEST_CASE("cuda optimizers: AdamW matches the CPU, and its state moves between devices",
          "[cuda][optim]") {
  check_optimizer([](std::vector<Tensor> params) {
    return std::make_unique<optim::AdamW>(std::move(params),
                                          optim::AdamWOptions(1e-2).betas(0.8, 0.99).eps(1e-6));
  });
}

TEST_CASE("cuda optimizers: a learning rate changed between steps drives both devices alike",
          "[cuda][optim]") {
  Params p;
  optim::SGD cpu_opt(p.cpu, optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD gpu_opt(p.gpu, optim::SGDOptions(0.1).momentum(0.9));
  for (int s = 0; s < 3; ++s) {
    cpu_opt.set_lr(0.1 / (s + 1));
    gpu_opt.set_lr(0.1 / (s + 1));
    p.set_grads(s);
    cpu_opt.step();
    gpu_opt.step();
  }
  p.check_close("after three learning rates");
}
