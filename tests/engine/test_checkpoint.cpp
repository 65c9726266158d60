// Activation checkpointing: gradients bit-identical to the plain graph on a model with
// dropout and batch norm (running statistics moved once, RNG draws unchanged), the peak
// allocated bytes of a deep network cut, and misuse reported as frugal::Error.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>

#include "allocator/default_allocators.h"
#include "engine/autograd/checkpoint.h"
#include "engine/frugal.h"
#include "nn/nn.h"

using namespace frugal;

namespace {

// Same shape, dtype and bytes: equal to the last bit (NaN payloads included).
bool identical(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

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

// One forward and backward at a fixed RNG state, plain or checkpointed with `segments`.
StepResult step(nn::Sequential& model, const Tensor& x, const Tensor& target, int segments) {
  default_generator().set_state(99, 12345);
  const Tensor input = x.detach().requires_grad_();
  const Tensor logits =
      segments == 0 ? model.forward(input) : nn::checkpoint_sequential(model, segments, input);
  StepResult r;
  r.loss = cross_entropy(logits, target);
  r.loss.backward();
  r.rng_offset = default_generator().offset();
  r.input_grad = input.grad();
  for (const auto& [name, p] : model.named_parameters()) r.grads.emplace_back(name, p.grad());
  for (const auto& [name, t] : model.state_dict()) r.state.emplace_back(name, t.clone());
  return r;
}

}  // namespace

TEST_CASE("checkpoint: the gradients of a function with parameters and dropout are bit-identical") {
  Generator gen(3);
  Tensor w = randn({16, 16}, {}, &gen).requires_grad_();
  Tensor x = randn({8, 16}, {}, &gen).requires_grad_();
  const auto fn = [&w](const std::vector<Tensor>& in) {
    return dropout(relu(matmul(in[0], w)), 0.5, true).tanh();
  };

  default_generator().set_state(5, 0);
  fn({x}).sum().backward();
  const Tensor gw = w.grad().clone(), gx = x.grad().clone();
  const std::uint64_t offset = default_generator().offset();
  w.mutable_grad() = Tensor();
  x.mutable_grad() = Tensor();

  default_generator().set_state(5, 0);
  const Tensor y = autograd::checkpoint(fn, {x});
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(std::string(y.grad_fn()->name()) == "checkpoint");
  default_generator().set_state(5, 777);  // draws between forward and backward must not matter
  y.sum().backward();
  CHECK(default_generator().offset() == 777);  // the recompute put the generator back
  CHECK(identical(w.grad(), gw));
  CHECK(identical(x.grad(), gx));
  CHECK(offset > 0);
}

TEST_CASE("checkpoint: parameters get gradients even when no input requires grad") {
  const Tensor w = full({4}, 2.0).requires_grad_();
  const Tensor x = arange(4, kFloat32);
  const Tensor y =
      autograd::checkpoint([&w](const std::vector<Tensor>& in) { return in[0] * w; }, {x});
  y.sum().backward();
  REQUIRE(w.grad().defined());
  CHECK(identical(w.grad(), x));
}

TEST_CASE("checkpoint: under NoGradGuard it is the plain function, with no node") {
  NoGradGuard no_grad;
  const Tensor x = ones({3}).requires_grad_();
  const Tensor y =
      autograd::checkpoint([](const std::vector<Tensor>& in) { return in[0] * 2.0; }, {x});
  CHECK(y.grad_fn() == nullptr);
}

TEST_CASE(
    "checkpoint: retain_graph lets backward recompute twice; without it the second is an error") {
  const Tensor w = full({3}, 3.0).requires_grad_();
  const auto fn = [&w](const std::vector<Tensor>& in) { return (in[0] * w).sum(); };
  const Tensor y = autograd::checkpoint(fn, {ones({3})});
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  CHECK(w.grad().sum().item<float>() == 6.0f);  // two backward passes accumulated
  CHECK_THROWS_AS(y.backward(), Error);
}

TEST_CASE("checkpoint: a function that modifies its input in place is caught in backward") {
  const Tensor w = ones({3}).requires_grad_();
  const Tensor x = ones({3});
  const Tensor y = autograd::checkpoint(
      [&w](const std::vector<Tensor>& in) {
        Tensor t = in[0];
        t.mul_(2.0);
        return t * w;
      },
      {x});
  CHECK_THROWS_AS(y.sum().backward(), Error);
}

TEST_CASE(
    "checkpoint_sequential: bit-identical gradients and batch-norm statistics with dropout and "
    "BN") {
  manual_seed(1);
  auto plain = model_with_dropout_and_bn();
  Generator gen(2);
  const Tensor x = randn({6, 3, 8, 8}, {}, &gen);
  const Tensor target = randint(0, 10, {6}, kInt64, &gen);

  const StepResult a = step(*plain, x, target, 0);
  for (const int segments : {2, 3, 5}) {
    manual_seed(1);  // the same initial weights and statistics as `plain`
    auto fresh = model_with_dropout_and_bn();
    const StepResult b = step(*fresh, x, target, segments);
    INFO("segments " << segments);
    CHECK(identical(a.loss, b.loss));
    CHECK(identical(a.input_grad, b.input_grad));
    CHECK(a.rng_offset == b.rng_offset);
    REQUIRE(a.grads.size() == b.grads.size());
    for (std::size_t i = 0; i < a.grads.size(); ++i) {
      INFO(a.grads[i].first);
      CHECK(identical(a.grads[i].second, b.grads[i].second));
    }
    // Running mean, variance and num_batches_tracked moved exactly once.
    for (std::size_t i = 0; i < a.state.size(); ++i) {
      INFO(a.state[i].first);
      CHECK(identical(a.state[i].second, b.state[i].second));
    }
  }
}

namespace {

// The peak allocated bytes of one forward and backward (everything live counted: parameters,
// input, gradients), and the parameters' gradients.
std::int64_t peak_of_step(nn::Sequential& model, const Tensor& x, const Tensor& target,
                          int segments) {
  model.zero_grad();
  alloc::cpu_allocator().reset_peak_memory_stats();
  {
    const Tensor logits =
        segments == 0 ? model.forward(x) : nn::checkpoint_sequential(model, segments, x);
    cross_entropy(logits, target).backward();
  }
  return alloc::cpu_allocator().stats().allocated_bytes.all().peak;
}

}  // namespace

TEST_CASE("checkpoint_sequential: a 20-block conv net's peak allocated bytes fall by over 40%") {
  manual_seed(4);
  auto model = nn::deep_convnet(20, 16);
  Generator gen(5);
  const Tensor x = randn({4, 3, 32, 32}, {}, &gen);
  const Tensor target = randint(0, 10, {4}, kInt64, &gen);

  const std::int64_t plain = peak_of_step(*model, x, target, 0);
  nn::NamedTensors plain_grads;
  for (const auto& [name, p] : model->named_parameters())
    plain_grads.emplace_back(name, p.grad().clone());
  const std::int64_t checkpointed = peak_of_step(*model, x, target, 6);  // about sqrt(42 modules)
  const double reduction = 1.0 - static_cast<double>(checkpointed) / static_cast<double>(plain);
  INFO("peak allocated: plain " << plain << " B, checkpointed " << checkpointed << " B, reduction "
                                << reduction * 100 << "%");
  CHECK(reduction >= 0.40);
  std::size_t i = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    INFO(name);
    CHECK(identical(p.grad(), plain_grads[i++].second));
  }
}

TEST_CASE("checkpoint_segment_starts: even splits, and no segment starts at an in-place ReLU") {
  std::vector<std::shared_ptr<nn::Module>> m{
      std::make_shared<nn::Linear>(2, 2), std::make_shared<nn::Linear>(2, 2),
      std::make_shared<nn::ReLU>(true),   std::make_shared<nn::Linear>(2, 2),
      std::make_shared<nn::ReLU>(false),  std::make_shared<nn::Linear>(2, 2)};
  CHECK(nn::checkpoint_segment_starts(m, 1) == std::vector<std::size_t>{0});
  CHECK(nn::checkpoint_segment_starts(m, 3) ==
        std::vector<std::size_t>{0, 1, 4});  // 2 is in place: 1
  CHECK(nn::checkpoint_segment_starts(m, 6) == std::vector<std::size_t>{0, 1, 3, 4, 5});
  CHECK(nn::checkpoint_segment_starts(m, 100).size() == 5);
  CHECK_THROWS_AS(nn::checkpoint_segment_starts(m, 0), Error);
}

TEST_CASE(
    "checkpoint_segments: the same modules and state_dict; checkpointed only when training with "
    "grad") {
  manual_seed(6);
  auto model = nn::cnn();
  const auto wrapped = nn::checkpoint_segments(model, 3);
  const nn::NamedTensors a = model->state_dict(), b = wrapped->state_dict();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.data_ptr() == b[i].second.data_ptr());  // shared, not copied
  }
  std::shared_ptr<nn::Sequential> as_sequential = wrapped;  // what frugal-train holds
  Generator gen(7);
  const Tensor x = randn({2, 1, 28, 28}, {}, &gen);
  const Tensor target = randint(0, 10, {2}, kInt64, &gen);

  default_generator().set_state(1, 0);
  cross_entropy(model->forward(x), target).backward();
  nn::NamedTensors plain;
  for (const auto& [name, p] : model->named_parameters())
    plain.emplace_back(name, p.grad().clone());
  model->zero_grad();
  default_generator().set_state(1, 0);
  // Batch statistics in training: the running ones the first step moved do not enter.
  cross_entropy(as_sequential->forward(x), target).backward();
  std::size_t i = 0;
  for (const auto& [name, p] : wrapped->named_parameters())
    CHECK(identical(p.grad(), plain[i++].second));

  wrapped->eval();
  CHECK(!(*model)[0]->is_training());  // the modules are shared
  CHECK_THROWS_AS(nn::checkpoint_segments(model, 0), Error);
  CHECK(nn::describe(*wrapped).find("checkpoint_segments=3") != std::string::npos);
}

TEST_CASE("checkpoint_sequential under autocast: the recompute runs in the forward's bfloat16") {
  Generator gen(8);
  const Tensor x = randn({4, 3, 8, 8}, {}, &gen);
  const Tensor target = randint(0, 10, {4}, kInt64, &gen);
  const auto run = [&](int segments) {
    manual_seed(1);
    auto model = model_with_dropout_and_bn();
    default_generator().set_state(3, 0);
    Tensor loss;
    {
      AutocastGuard autocast(kCPU);
      const Tensor logits =
          segments == 0 ? model->forward(x) : nn::checkpoint_sequential(*model, segments, x);
      loss = cross_entropy(logits, target);
    }
    loss.backward();  // outside the autocast region, as AutocastGuard asks
    nn::NamedTensors grads;
    for (const auto& [name, p] : model->named_parameters()) grads.emplace_back(name, p.grad());
    return std::make_pair(loss, grads);
  };
  const auto [plain_loss, plain] = run(0);
  const auto [loss, checkpointed] = run(3);
  CHECK(identical(plain_loss, loss));
  for (std::size_t i = 0; i < plain.size(); ++i) {
    INFO(plain[i].first);
    CHECK(identical(plain[i].second, checkpointed[i].second));
  }
}

TEST_CASE("checkpoint: a checkpoint inside a checkpointed function gives the same gradients") {
  Generator gen(9);
  const Tensor w1 = randn({8, 8}, {}, &gen).requires_grad_();
  const Tensor w2 = randn({8, 8}, {}, &gen).requires_grad_();
  const Tensor x = randn({4, 8}, {}, &gen);
  const auto inner = [&](const std::vector<Tensor>& in) { return matmul(in[0], w2).tanh(); };
  const auto outer = [&](const std::vector<Tensor>& in) {
    return autograd::checkpoint(inner, {matmul(in[0], w1).relu()}).sum();
  };
  outer({x}).backward();
  const Tensor g1 = w1.grad().clone(), g2 = w2.grad().clone();
  nn::zero_grad({w1, w2});
  autograd::checkpoint(outer, {x}).backward();
  CHECK(identical(w1.grad(), g1));
  CHECK(identical(w2.grad(), g2));
}

TEST_CASE("checkpoint: is_recomputing is true only while backward replays the function") {
  std::vector<bool> seen;
  const Tensor w = ones({2}).requires_grad_();
  const Tensor y = autograd::checkpoint(
      [&](const std::vector<Tensor>& in) {
        seen.push_back(autograd::is_recomputing());
        return (in[0] * w).sum();
      },
      {ones({2})});
  y.backward();
  CHECK(seen == std::vector<bool>{false, true});
  CHECK(!autograd::is_recomputing());
}
