// Training features on CUDA tensors against the same computation on the CPU:
// nn::utils::clip_grad_norm_ on CUDA gradients, activation checkpointing with dropout and batch
// norm on the GPU (gradients as the plain graph's), and the data loader's pinned batches copied
// to the GPU with to(cuda, non_blocking) while their buffers are recycled.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "allocator/default_allocators.h"
#include "data/data_loader.h"
#include "data/sample_random.h"
#include "engine/autograd/checkpoint.h"
#include "kernels/cuda/stream.h"
#include "nn/nn.h"
#include "tests/cuda/tensor_compare.h"

using namespace frugal;
using Catch::Matchers::Contains;
using frugal::test::bitwise_equal;
using frugal::test::kGpu;
using frugal::test::max_relative_difference;

// ---------------------------------------------------------------------------------------------
// clip_grad_norm_

namespace {

// Parameters of several shapes with the same random gradients on the CPU and on the GPU.
struct ClipTwins {
  std::vector<Tensor> cpu, gpu;
  explicit ClipTwins(std::uint64_t seed, double grad_scale) {
    Generator gen(seed);
    const std::vector<std::vector<std::int64_t>> shapes = {{64, 33}, {33}, {16, 8, 3, 3}, {1}};
    for (const auto& sizes : shapes) {
      Tensor p = randn(sizes, {}, &gen).requires_grad_();
      Tensor q = p.detach().cuda().requires_grad_();
      const Tensor g = mul(randn(sizes, {}, &gen), grad_scale);
      p.mutable_grad() = g.clone();
      q.mutable_grad() = g.cuda();
      cpu.push_back(p);
      gpu.push_back(q);
    }
    // A parameter without a gradient is skipped on both.
    cpu.push_back(ones({3}).requires_grad_());
    gpu.push_back(ones({3}).cuda().requires_grad_());
  }
};

}  // namespace

TEST_CASE("cuda clip_grad_norm_: the total norm and the clipped gradients match the CPU",
          "[cuda][clip]") {
  const double inf = std::numeric_limits<double>::infinity();
  for (const double norm_type : {2.0, 1.0, 3.0, inf}) {
    for (const double max_norm : {0.5, 1e6}) {  // clipping, and a bound the norm stays under
      INFO("norm_type " << norm_type << ", max_norm " << max_norm);
      ClipTwins t(31, 1.0);
      const double cpu_total = nn::utils::clip_grad_norm_(t.cpu, max_norm, norm_type);
      const double gpu_total = nn::utils::clip_grad_norm_(t.gpu, max_norm, norm_type);
      // Both sum float64 terms, in different orders.
      CHECK(std::abs(gpu_total - cpu_total) <= 1e-12 * cpu_total);
      CHECK(cpu_total > 0.5);
      for (std::size_t i = 0; i < t.cpu.size(); ++i) {
        INFO("parameter " << i);
        const Tensor& g = t.gpu[i].grad();
        CHECK(g.defined() == t.cpu[i].grad().defined());
        if (!g.defined()) continue;
        CHECK(g.is_cuda());
        // The same float64 coefficient, rounded to float32 for the multiply on both devices.
        CHECK(max_relative_difference(g, t.cpu[i].grad()) <= 1e-6);
      }
      if (max_norm > cpu_total) {
        const ClipTwins fresh(31, 1.0);  // untouched: no multiply at all
        for (std::size_t i = 0; i + 1 < t.gpu.size(); ++i)
          CHECK(bitwise_equal(t.gpu[i].grad(), fresh.gpu[i].grad()));
      }
    }
  }
}

TEST_CASE("cuda clip_grad_norm_: an inf on the GPU gives an inf norm, or the error when asked",
          "[cuda][clip]") {
  const double inf = std::numeric_limits<double>::infinity();
  for (const double norm_type : {2.0, inf}) {
    INFO("norm_type " << norm_type);
    ClipTwins t(32, 1.0);
    Tensor(t.gpu[0].grad()).view({-1}).narrow(0, 100, 1).fill_(inf);
    Tensor(t.cpu[0].grad()).view({-1}).narrow(0, 100, 1).fill_(inf);
    // Refused before anything is scaled.
    CHECK_THROWS_WITH(
        nn::utils::clip_grad_norm_(t.gpu, 1.0, norm_type, /*error_if_nonfinite=*/true),
        Contains("non-finite"));
    CHECK(std::isinf(max(abs(t.gpu[0].grad())).item<float>()));
    // Otherwise inf is returned and every gradient scaled by max_norm / inf = 0 (the inf
    // itself becoming NaN), as on the CPU and in PyTorch.
    CHECK(std::isinf(nn::utils::clip_grad_norm_(t.gpu, 1.0, norm_type)));
    CHECK(std::isinf(nn::utils::clip_grad_norm_(t.cpu, 1.0, norm_type)));
    for (std::size_t i = 0; i + 1 < t.cpu.size(); ++i) {
      INFO("parameter " << i);
      const Tensor g = t.gpu[i].grad().cpu().contiguous();
      CHECK(max_relative_difference(g, t.cpu[i].grad()) == 0);  // NaN where the CPU has NaN
      const float* v = g.data_ptr<float>();
      for (std::int64_t k = 0; k < g.numel(); ++k) {
        const bool ok = i == 0 && k == 100 ? std::isnan(v[k]) : v[k] == 0.0f;
        if (!ok) {
          INFO("element " << k << " is " << v[k]);
          CHECK(ok);
          break;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Activation checkpointing

TEST_CASE("cuda checkpoint: a function with dropout gives the plain graph's gradients bit for bit",
          "[cuda][checkpoint]") {
  Generator gen(3);
  const Tensor w_cpu = randn({64, 64}, {}, &gen), x_cpu = randn({32, 64}, {}, &gen);
  Tensor w = w_cpu.cuda().requires_grad_(), x = x_cpu.cuda().requires_grad_();
  const auto fn = [&w](const std::vector<Tensor>& in) {
    return dropout(relu(matmul(in[0], w)), 0.5, true).tanh();
  };

  default_generator().set_state(5, 0);
  fn({x}).sum().backward();
  const Tensor gw = w.grad().clone(), gx = x.grad().clone();
  const std::uint64_t offset = default_generator().offset();
  CHECK(offset > 0);  // dropout drew from the generator
  w.mutable_grad() = Tensor();
  x.mutable_grad() = Tensor();

  default_generator().set_state(5, 0);
  const Tensor y = autograd::checkpoint(fn, {x});
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(y.is_cuda());
  default_generator().set_state(5, 777);  // draws between forward and backward must not matter
  y.sum().backward();
  CHECK(default_generator().offset() == 777);  // the recompute put the generator back
  CHECK(w.grad().is_cuda());
  CHECK(bitwise_equal(w.grad(), gw));
  CHECK(bitwise_equal(x.grad(), gx));

  // And the CPU, from the same generator state, draws the same masks: the gradients agree
  // within float32 rounding.
  Tensor wc = w_cpu.clone().requires_grad_(), xc = x_cpu.clone().requires_grad_();
  default_generator().set_state(5, 0);
  dropout(relu(matmul(xc, wc)), 0.5, true).tanh().sum().backward();
  CHECK(max_relative_difference(w.grad(), wc.grad()) < 1e-4);
  CHECK(max_relative_difference(x.grad(), xc.grad()) < 1e-4);
}

namespace {

std::shared_ptr<nn::Sequential> model_with_dropout_and_bn() {
  auto s = std::make_shared<nn::Sequential>();
  s->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 8, 3).padding(1).bias(false)));
  s->push_back(std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(8).fused_relu(true)));
  s->push_back(std::make_shared<nn::Dropout>(0.3));
  s->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(8, 8, 3).padding(1).bias(false)));
  s->push_back(std::make_shared<nn::BatchNorm2d>(8));
  s->push_back(std::make_shared<nn::ReLU>(true));
  s->push_back(std::make_shared<nn::Dropout>(0.2));
  s->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(8, 8, 3).padding(1).bias(false)));
  s->push_back(std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(8).fused_relu(true)));
  s->push_back(std::make_shared<nn::MaxPool2d>(2));
  s->push_back(std::make_shared<nn::Flatten>());
  s->push_back(std::make_shared<nn::Linear>(8 * 4 * 4, 10));
  return s;
}

struct StepResult {
  Tensor loss, input_grad;
  nn::NamedTensors grads, state;
  std::uint64_t rng_offset;
};

// One forward and backward at a fixed RNG state, plain (segments 0) or checkpointed, of a
// fresh model made from seed 1, on `device`.
StepResult step(Device device, const Tensor& x, const Tensor& target, int segments) {
  manual_seed(1);
  auto model = model_with_dropout_and_bn();
  model->to(device);
  default_generator().set_state(99, 12345);
  const Tensor input = x.to(device).detach().requires_grad_();
  const Tensor logits =
      segments == 0 ? model->forward(input) : nn::checkpoint_sequential(*model, segments, input);
  StepResult r;
  r.loss = cross_entropy(logits, target.to(device));
  r.loss.backward();
  r.rng_offset = default_generator().offset();
  r.input_grad = input.grad();
  for (const auto& [name, p] : model->named_parameters()) r.grads.emplace_back(name, p.grad());
  for (const auto& [name, t] : model->state_dict()) r.state.emplace_back(name, t.clone());
  return r;
}

}  // namespace

TEST_CASE(
    "cuda checkpoint_sequential: dropout and batch norm on the GPU, gradients as without "
    "checkpointing",
    "[cuda][checkpoint]") {
  Generator gen(2);
  const Tensor x = randn({6, 3, 8, 8}, {}, &gen);
  const Tensor target = randint(0, 10, {6}, kInt64, &gen);

  const StepResult plain = step(kGpu, x, target, 0);
  REQUIRE(plain.loss.is_cuda());
  // cuDNN's heuristic may pick a backward algorithm that sums with atomics, whose last bits
  // vary from run to run; where two plain runs agree bit for bit, checkpointing must too.
  const StepResult again = step(kGpu, x, target, 0);
  bool repeatable = bitwise_equal(again.input_grad, plain.input_grad);
  for (std::size_t i = 0; i < plain.grads.size(); ++i)
    repeatable &= bitwise_equal(again.grads[i].second, plain.grads[i].second);
  INFO("two plain runs are " << (repeatable ? "" : "not ") << "bit-identical");
  auto same = [repeatable](const Tensor& a, const Tensor& b) {
    return repeatable ? bitwise_equal(a, b) : max_relative_difference(a, b) < 1e-5;
  };

  for (const int segments : {2, 3, 5}) {
    INFO("segments " << segments);
    const StepResult c = step(kGpu, x, target, segments);
    // The forward is recomputed with the same dropout masks: the loss, the generator's
    // position and the running statistics (moved once) are exact.
    CHECK(bitwise_equal(c.loss, plain.loss));
    CHECK(c.rng_offset == plain.rng_offset);
    REQUIRE(c.state.size() == plain.state.size());
    for (std::size_t i = 0; i < c.state.size(); ++i) {
      INFO(c.state[i].first);
      CHECK(c.state[i].second.is_cuda());
      CHECK(bitwise_equal(c.state[i].second, plain.state[i].second));
    }
    CHECK(same(c.input_grad, plain.input_grad));
    REQUIRE(c.grads.size() == plain.grads.size());
    for (std::size_t i = 0; i < c.grads.size(); ++i) {
      INFO(c.grads[i].first);
      REQUIRE(c.grads[i].second.defined());
      CHECK(c.grads[i].second.is_cuda());
      CHECK(same(c.grads[i].second, plain.grads[i].second));
    }
  }

  // The CPU draws the same dropout masks from the same state: loss, statistics and gradients
  // agree within float32 rounding (through three convolutions and batch norms).
  const StepResult cpu = step(Device(kCPU), x, target, 3);
  CHECK(cpu.rng_offset == plain.rng_offset);
  CHECK(max_relative_difference(plain.loss, cpu.loss) < 1e-5);
  for (std::size_t i = 0; i < cpu.state.size(); ++i) {
    INFO(cpu.state[i].first);
    CHECK(max_relative_difference(plain.state[i].second, cpu.state[i].second) < 1e-4);
  }
  CHECK(max_relative_difference(plain.input_grad, cpu.input_grad) < 1e-3);
  for (std::size_t i = 0; i < cpu.grads.size(); ++i) {
    INFO(cpu.grads[i].first);
    CHECK(max_relative_difference(plain.grads[i].second, cpu.grads[i].second) < 1e-3);
  }
}

// ---------------------------------------------------------------------------------------------
// Pinned batches from the data loader

namespace {

// Sample i: a [3, 16, 16] float image of values that depend on i and on its augmentation seed
// (so the workers' output is checked too), target i.
class PatternDataset : public data::Dataset {
 public:
  explicit PatternDataset(std::int64_t n) : n_(n) {}
  std::int64_t size() const override { return n_; }
  data::SampleSpec spec() const override { return {{3, 16, 16}, kFloat32, {}, kInt64}; }
  void get(std::int64_t i, const data::SampleSlot& slot) const override {
    data::SampleRandom random(slot.seed);
    auto* d = static_cast<float*>(slot.data);
    for (int k = 0; k < 3 * 16 * 16; ++k)
      d[k] = static_cast<float>(i) + static_cast<float>(random.below(1 << 20)) / (1 << 20);
    *static_cast<std::int64_t*>(slot.target) = i;
  }

 private:
  std::int64_t n_;
};

}  // namespace

TEST_CASE("cuda data loader: pinned batches copied with to(cuda, non_blocking) arrive intact",
          "[cuda][data]") {
  auto set = std::make_shared<PatternDataset>(640);
  const data::DataLoaderOptions plain_options{
      .batch_size = 32, .shuffle = true, .seed = 7, .num_workers = 2};
  data::DataLoaderOptions pinned_options = plain_options;
  pinned_options.pin_memory = true;

  // The reference: the same epoch in pageable memory, kept on the CPU.
  std::vector<data::Batch> reference;
  for (data::Batch& b : data::DataLoader(set, plain_options))
    reference.push_back({b.data.clone(), b.target.clone()});
  REQUIRE(reference.size() == 20);

  // Blocks other tests left pending on the copy stream are retired first, so the count of
  // active pinned blocks at the end means this test's.
  auto& pinned = alloc::pinned_allocator();
  kernels::cuda::synchronize_stream(kernels::cuda::copy_stream(0));
  (void)ones({1}).pin_memory();  // an allocation retires the completed events
  const std::int64_t active_before = pinned.stats().active.all().current;
  pinned.reset_peak_memory_stats();
  std::vector<data::Batch> on_gpu;
  std::vector<Tensor> row_sums;
  {
    data::DataLoader loader(set, pinned_options);
    for (data::Batch& b : loader) {
      REQUIRE(b.data.is_pinned());
      REQUIRE(b.target.is_pinned());
      data::Batch copy{b.data.to(kGpu, /*non_blocking=*/true),
                       b.target.to(kGpu, /*non_blocking=*/true)};
      CHECK(copy.data.is_cuda());
      // Work queued at once on the current stream must see the copied data (it waits for the
      // copy stream); the loader then reuses the pinned buffer only after the copy has read it.
      row_sums.push_back(sum(copy.data, {1, 2, 3}));
      on_gpu.push_back(std::move(copy));
    }
  }
  REQUIRE(on_gpu.size() == reference.size());
  for (std::size_t i = 0; i < on_gpu.size(); ++i) {
    INFO("batch " << i);
    CHECK(bitwise_equal(on_gpu[i].data, reference[i].data));
    CHECK(bitwise_equal(on_gpu[i].target, reference[i].target));
    CHECK(max_relative_difference(row_sums[i], sum(reference[i].data, {1, 2, 3})) < 1e-5);
  }
  // The buffers were recycled, not one per batch: far fewer pinned bytes than the epoch's 20
  // batches (2 MB of data) were ever held at once.
  const std::int64_t batch_bytes = 32 * 3 * 16 * 16 * 4;
  CHECK(pinned.stats().active_bytes.all().peak < 10 * batch_bytes);
  // Once the copies are done, every pinned block comes back.
  kernels::cuda::synchronize_stream(kernels::cuda::copy_stream(0));
  const Tensor probe = ones({1}).pin_memory();
  CHECK(pinned.stats().active.all().current == active_before + 1);
}
