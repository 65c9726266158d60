// The batch-size finder: exact on a step whose memory is known in closed form (linear and
// not), within 5% on cnn and mobilenet at a batch it did not probe, the largest batch that a
// capped allocator (the simulated device capacity) runs, and the model left untouched.
#include <catch2/catch.hpp>

#include <cstring>

#include "allocator/default_allocators.h"
#include "nn/nn.h"

using namespace frugal;

namespace {

constexpr std::int64_t kMiB = 1 << 20;

std::int64_t allocated_now() {
  return alloc::cpu_allocator().stats().allocated_bytes.all().current;
}

// Puts the CPU allocator's cap back however the test ends.
struct MemoryLimit {
  explicit MemoryLimit(std::size_t bytes) { alloc::cpu_allocator().set_memory_limit(bytes); }
  ~MemoryLimit() { alloc::cpu_allocator().set_memory_limit(0); }
};

bool identical(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

nn::OptimizerFactory sgd() {
  return [](const std::vector<Tensor>& p) {
    return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9));
  };
}

// frugal-train's step with its own optimizer, warmed up at batch 1 so that its momentum and
// the gradients are live as in the finder's steps; returns the peak allocated bytes of a step
// at `batch`, or -1 on out-of-memory.
std::int64_t real_step_peak(nn::Module& model, std::int64_t batch) {
  optim::SGD optimizer(model.parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const auto step = [&](std::int64_t n) {
    const Tensor x = randn({n, 1, 28, 28});
    Tensor logits = model.forward(x);
    Tensor loss = cross_entropy(logits, randint(0, 10, {n}));
    logits = Tensor();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  };
  step(1);
  alloc::cpu_allocator().empty_cache();  // as the finder does before each step
  alloc::cpu_allocator().reset_peak_memory_stats();
  try {
    step(batch);
  } catch (const OutOfMemoryError&) {
    return -1;
  }
  return alloc::cpu_allocator().stats().allocated_bytes.all().peak;
}

double relative_error(std::int64_t predicted, std::int64_t measured) {
  return std::abs(static_cast<double>(predicted - measured)) / static_cast<double>(measured);
}

}  // namespace

TEST_CASE("find_batch_size: exact on a step whose peak is linear in the batch") {
  // Each step holds 3 MiB + 100 KiB per sample at its peak, on top of what is already live.
  const std::int64_t base = allocated_now();
  const auto step = [](std::int64_t batch) {
    Tensor fixed = empty({3 * kMiB}, kUInt8);
    Tensor per_sample = empty({100 * 1024 * batch}, kUInt8);
  };
  const std::int64_t budget = base + 3 * kMiB + 100 * 1024 * 57 + 1000;
  const nn::BatchSizeResult r = nn::find_batch_size(step, alloc::cpu_allocator(), budget);
  CHECK(r.batch == 57);
  CHECK(r.bytes_per_sample == 100 * 1024);
  CHECK(r.predicted_peak == r.measured_peak);
  CHECK(r.measured_peak <= budget);
  // Warm-up, two probes, the proposal, and one more to show it is the largest.
  REQUIRE(r.steps.size() == 5);
  CHECK(r.steps[3].batch == 57);
  CHECK(r.steps[4].batch == 58);
  CHECK(!r.steps[4].fits);
  CHECK(r.next_batch_failed);
}

TEST_CASE(
    "find_batch_size: where the fit is wrong, verifying steps refine to the largest batch that "
    "fits") {
  const std::int64_t base = allocated_now();
  // Grows faster than linear: the two small probes under-predict, so the first proposal fails.
  const auto bytes = [](std::int64_t batch) { return 64 * 1024 * batch + 2048 * batch * batch; };
  const auto step = [&](std::int64_t batch) { Tensor t = empty({bytes(batch)}, kUInt8); };
  const std::int64_t budget = base + bytes(80) + 100;
  nn::BatchSizeFinderOptions options;
  options.max_verify_steps = 8;
  const nn::BatchSizeResult r = nn::find_batch_size(step, alloc::cpu_allocator(), budget, options);
  CHECK(r.batch == 80);
  CHECK(r.next_batch_failed);
  CHECK(r.measured_peak <= budget);
  bool some_verify_failed = false;
  for (const auto& s : r.steps) some_verify_failed |= s.role == "verify" && !s.fits;
  CHECK(some_verify_failed);
}

TEST_CASE("find_batch_size: out-of-memory during a step backs off instead of failing") {
  // A device that fails above batch 45 although the allocated peak would fit (fragmentation,
  // a workspace that cannot be had): only out-of-memory errors can stop the search there.
  const auto step = [](std::int64_t batch) {
    Tensor t = empty({64 * 1024 * batch}, kUInt8);
    if (batch > 45) throw OutOfMemoryError(alloc::cpu_allocator().memory_report(1));
  };
  nn::BatchSizeFinderOptions options;
  options.max_verify_steps = 8;
  const nn::BatchSizeResult r = nn::find_batch_size(
      step, alloc::cpu_allocator(), allocated_now() + 64 * 1024 * 57 + 100, options);
  std::vector<std::int64_t> tried;
  for (const auto& s : r.steps)
    if (s.role == "verify") tried.push_back(s.batch);
  // The fit's proposal, 10% less twice, then bisection between what ran and what failed.
  CHECK(tried == std::vector<std::int64_t>{57, 51, 45, 48, 46});
  CHECK(r.steps[1].out_of_memory == false);
  CHECK(r.steps[3].out_of_memory);
  CHECK(r.batch == 45);
  CHECK(r.next_batch_failed);
}

TEST_CASE("find_batch_size: bad budgets and options are errors") {
  const auto step = [](std::int64_t batch) { Tensor t = empty({kMiB * batch}, kUInt8); };
  CHECK_THROWS_AS(nn::find_batch_size(step, alloc::cpu_allocator(), allocated_now() + 1000), Error);
  nn::BatchSizeFinderOptions bad;
  bad.second_probe = bad.first_probe;
  CHECK_THROWS_AS(nn::find_batch_size(step, alloc::cpu_allocator(), 0, bad), Error);
  CHECK_THROWS_AS(nn::find_batch_size(step, alloc::cpu_allocator(), -5), Error);
}

TEST_CASE(
    "find_batch_size: cnn and mobilenet, predicted within 5% of the measured peak at an unprobed "
    "batch") {
  for (const std::string name : {"cnn", "mobilenet"}) {
    INFO(name);
    manual_seed(11);
    auto model = nn::make_model(name);
    const std::int64_t budget = allocated_now() + (name == "cnn" ? 32 : 64) * kMiB;
    const nn::BatchSizeResult r = nn::find_batch_size(*model, sgd(), {1, 28, 28}, budget);
    INFO(nn::describe(r));
    CHECK(r.batch > 32);  // beyond both probes (16 and 32)
    CHECK(r.measured_peak <= budget);
    CHECK(relative_error(r.predicted_peak, r.measured_peak) < 0.05);
    // And further out, at a batch no step of the finder ran, a real step against the same line.
    const std::int64_t other = r.batch + 8;
    const std::int64_t measured = real_step_peak(*model, other);
    INFO("batch " << other << " predicted " << r.predict(other) << " measured " << measured);
    CHECK(relative_error(r.predict(other), measured) < 0.05);
  }
}

TEST_CASE("find_batch_size: the model, its gradients and the generator are as before") {
  manual_seed(12);
  auto model = nn::cnn();
  nn::NamedTensors before;
  for (const auto& [n, t] : model->state_dict()) before.emplace_back(n, t.clone());
  const std::uint64_t offset = default_generator().offset();
  model->eval();
  nn::BatchSizeFinderOptions options;
  options.first_probe = 1;
  options.second_probe = 3;
  options.max_batch = 6;
  const nn::BatchSizeResult r =
      nn::find_batch_size(*model, sgd(), {1, 28, 28}, allocated_now() + 64 * kMiB, options);
  CHECK(r.batch == 6);
  CHECK(!model->is_training());
  CHECK(default_generator().offset() == offset);
  const nn::NamedTensors after = model->state_dict();
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    INFO(before[i].first);
    CHECK(identical(after[i].second, before[i].second));
  }
  for (const Tensor& p : model->parameters()) CHECK(!p.grad().defined());
}

TEST_CASE("find_batch_size: with the allocator capped, the chosen batch is the largest that runs") {
  manual_seed(13);
  auto model = nn::cnn();
  alloc::cpu_allocator().empty_cache();
  const MemoryLimit limit(static_cast<std::size_t>(allocated_now() + 96 * kMiB));
  const nn::BatchSizeResult r =
      nn::find_batch_size(*model, sgd(), {1, 28, 28}, /*budget: the cap*/ 0);
  INFO(nn::describe(r));
  const auto cap = static_cast<double>(alloc::cpu_allocator().memory_limit());
  CHECK(r.budget == static_cast<std::int64_t>(cap * 0.9));  // the default headroom
  CHECK(r.batch > 32);
  // Measured, not predicted: the finder's own real step at batch + 1, under the cap, did not
  // fit...
  CHECK(r.next_batch_failed);
  bool next_failed = false;
  for (const auto& s : r.steps) next_failed |= s.batch == r.batch + 1 && !s.fits;
  CHECK(next_failed);
  // ...and so in fresh steps of the caller's own under the same cap: the chosen batch runs
  // within the budget, one more runs out of memory or past the budget.
  const std::int64_t at_batch = real_step_peak(*model, r.batch);
  CHECK(at_batch > 0);
  CHECK(at_batch <= r.budget);
  const std::int64_t at_next = real_step_peak(*model, r.batch + 1);
  INFO("batch + 1: " << (at_next < 0 ? std::string("out of memory")
                                     : std::to_string(at_next) + " B"));
  CHECK((at_next < 0 || at_next > r.budget));
}

TEST_CASE(
    "find_batch_size: near a tight cap, out-of-memory errors below the budget are bisected away") {
  // At 48 MiB the allocator's segments leave too little slack: steps run out of memory while
  // their allocated peak is still under the budget, which no line predicts.
  manual_seed(14);
  auto model = nn::cnn();
  alloc::cpu_allocator().empty_cache();
  const MemoryLimit limit(static_cast<std::size_t>(allocated_now() + 48 * kMiB));
  const nn::BatchSizeResult r = nn::find_batch_size(*model, sgd(), {1, 28, 28}, 0);
  INFO(nn::describe(r));
  bool oom_under_budget = false;
  for (const auto& s : r.steps) oom_under_budget |= s.out_of_memory;
  CHECK(oom_under_budget);
  CHECK(r.next_batch_failed);  // its own step at batch + 1 ran out of memory
  CHECK(r.batch > 32);
  const std::int64_t at_batch = real_step_peak(*model, r.batch);
  CHECK(at_batch > 0);  // the chosen batch runs under the cap in the caller's own step
  CHECK(at_batch <= r.budget);
}

TEST_CASE("find_batch_size: under autocast the fit follows the bfloat16 activations") {
  manual_seed(15);
  auto model = nn::mobilenet();
  // mobilenet's peak is linear from small batches on (the cnn's is not), so small probes do.
  nn::BatchSizeFinderOptions options;
  options.first_probe = 4;
  options.second_probe = 8;
  const std::int64_t budget = allocated_now() + 24 * kMiB;
  const nn::BatchSizeResult full = nn::find_batch_size(*model, sgd(), {1, 28, 28}, budget, options);
  options.autocast = kBFloat16;
  const nn::BatchSizeResult mixed =
      nn::find_batch_size(*model, sgd(), {1, 28, 28}, budget, options);
  INFO(nn::describe(mixed));
  INFO(nn::describe(full));
  CHECK(mixed.bytes_per_sample < 0.75 * full.bytes_per_sample);  // 16-bit activations
  CHECK(mixed.batch > full.batch);
  CHECK(relative_error(mixed.predicted_peak, mixed.measured_peak) < 0.05);
  CHECK(mixed.next_batch_failed);
}

TEST_CASE("find_batch_size: a model trained with activation checkpointing fits a larger batch") {
  manual_seed(16);
  auto plain = nn::cnn();
  const auto checkpointed = nn::checkpoint_segments(plain, 4);  // the same modules
  const std::int64_t budget = allocated_now() + 24 * kMiB;
  const nn::BatchSizeResult a = nn::find_batch_size(*plain, sgd(), {1, 28, 28}, budget);
  const nn::BatchSizeResult b = nn::find_batch_size(*checkpointed, sgd(), {1, 28, 28}, budget);
  INFO(nn::describe(a));
  INFO(nn::describe(b));
  CHECK(b.bytes_per_sample < 0.8 * a.bytes_per_sample);
  CHECK(b.batch > a.batch);
  CHECK(a.next_batch_failed);
  CHECK(b.next_batch_failed);
}

TEST_CASE("find_batch_size: a step of the caller's own, with the model restored after") {
  manual_seed(17);
  auto model = nn::cnn();
  nn::NamedTensors before;
  for (const auto& [n, t] : model->state_dict()) before.emplace_back(n, t.clone());
  int calls = 0;
  // frugal-train's order (examples/train/step.h): gradients freed before the forward.
  const nn::ModelTrainingStep step = [&](std::int64_t batch, optim::Optimizer& optimizer) {
    ++calls;
    optimizer.zero_grad();
    Tensor loss = cross_entropy(model->forward(randn({batch, 1, 28, 28})), randint(0, 10, {batch}));
    loss.backward();
    optimizer.step();
  };
  const std::int64_t budget = allocated_now() + 24 * kMiB;
  const nn::BatchSizeResult own = nn::find_batch_size(*model, sgd(), step, budget);
  INFO(nn::describe(own));
  CHECK(calls == static_cast<int>(own.steps.size()));
  CHECK(own.batch > 16);
  CHECK(own.next_batch_failed);
  CHECK(relative_error(own.predicted_peak, own.measured_peak) < 0.05);
  const nn::NamedTensors after = model->state_dict();
  for (std::size_t i = 0; i < after.size(); ++i)
    CHECK(identical(after[i].second, before[i].second));
}
