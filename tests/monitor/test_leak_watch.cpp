// The leak watch: its streak and threshold rules on fixed samples, its naming of the top
// growing tags from a provider, and two real training loops on frugal tensors — one that
// keeps every step's input alive (flagged within 3 epochs, naming the culprit) and a
// correct one (20 epochs, no warning).
#include <catch2/catch.hpp>

#include <vector>

#include "allocator/default_allocators.h"
#include "common/error.h"
#include "engine/frugal.h"
#include "kernels/cpu/parallel.h"
#include "monitor/history_tags.h"
#include "monitor/leak_watch.h"
#include "nn/nn.h"

using namespace frugal;
using namespace frugal::monitor;

namespace {

constexpr std::int64_t MiB = std::int64_t{1} << 20;

MemorySample at(std::int64_t epoch, std::int64_t allocated, std::int64_t reserved = 0,
                std::int64_t rss = 0) {
  return MemorySample{epoch, allocated, reserved, rss};
}

}  // namespace

TEST_CASE("LeakWatch warns after N consecutive growths above the noise threshold",
          "[monitor][leak]") {
  LeakWatch watch;  // 3 epochs, 1 MiB and 1%
  CHECK(watch.observe(at(0, 100 * MiB)).empty());
  CHECK(watch.observe(at(1, 102 * MiB)).empty());
  CHECK(watch.observe(at(2, 104 * MiB)).empty());
  const auto warnings = watch.observe(at(3, 106 * MiB));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].metric == "allocated");
  CHECK(warnings[0].epoch == 3);
  CHECK(warnings[0].epochs_growing == 3);
  CHECK(warnings[0].before == 100 * MiB);
  CHECK(warnings[0].now == 106 * MiB);
  CHECK_THAT(warnings[0].message(), Catch::Contains("allocated grew in each of the last 3 epochs"));
  CHECK(watch.observe(at(4, 108 * MiB)).size() == 1);  // still growing: still warned
  CHECK(watch.observe(at(5, 108 * MiB)).empty());      // flat: the streak ends
  CHECK(watch.observe(at(6, 110 * MiB)).empty());
  CHECK(watch.warnings().size() == 2);
}

TEST_CASE("LeakWatch ignores growth within the noise threshold and interrupted streaks",
          "[monitor][leak]") {
  LeakWatchOptions options;
  options.consecutive_epochs = 2;
  LeakWatch watch(options);
  // 0.9 MiB a time: below 1 MiB.
  for (int e = 0; e < 10; ++e) CHECK(watch.observe(at(e, 50 * MiB + e * 900 * 1024)).empty());
  // 1.5 MiB on 500 MiB: above 1 MiB but below 1% (5 MiB).
  LeakWatch relative(options);
  for (int e = 0; e < 10; ++e) CHECK(relative.observe(at(e, 500 * MiB + e * 3 * MiB / 2)).empty());
  // Growth, a drop, growth: never two in a row.
  LeakWatch zigzag(options);
  for (int e = 0; e < 10; ++e)
    CHECK(zigzag.observe(at(e, (e % 2 ? 60 : 50) * MiB + e * 2 * MiB)).empty());
  // Each metric on its own: reserved grows while allocated stays.
  LeakWatch reserved(options);
  std::vector<LeakWarning> last;
  for (int e = 0; e < 3; ++e)
    last = reserved.observe(at(e, 10 * MiB, (20 + 5 * e) * MiB, 100 * MiB));
  REQUIRE(last.size() == 1);
  CHECK(last[0].metric == "reserved");
  CHECK_THROWS_AS(LeakWatch(LeakWatchOptions{0}), frugal::Error);
}

TEST_CASE("LeakWatch names the tags that grew most over the streak", "[monitor][leak]") {
  std::map<std::string, std::int64_t> live = {{"conv1", 10 * MiB}, {"fc", 4 * MiB}};
  LeakWatchOptions options;
  options.top_tags = 2;
  LeakWatch watch(options, [&] { return live; });
  watch.observe(at(0, 100 * MiB));
  std::vector<LeakWarning> warnings;
  for (int e = 1; e <= 3; ++e) {
    live["fc"] += 3 * MiB;
    live["conv1"] += MiB / 2;
    live["new.cache"] = e * MiB;  // absent at the start: counted from zero
    warnings = watch.observe(at(e, (100 + 5 * e) * MiB));
  }
  REQUIRE(warnings.size() == 1);
  REQUIRE(warnings[0].top_growing.size() == 2);
  CHECK(warnings[0].top_growing[0].tag == "fc");
  CHECK(warnings[0].top_growing[0].growth() == 9 * MiB);
  CHECK(warnings[0].top_growing[1].tag == "new.cache");
  CHECK(warnings[0].top_growing[1].growth() == 3 * MiB);
  CHECK_THAT(warnings[0].message(),
             Catch::Contains("grew most: fc +9.00 MiB, new.cache +3.00 MiB"));
}

namespace {

// A real training step loop on frugal tensors: a small mlp on random 28x28 images, SGD with
// momentum, 4 steps an epoch. With keep_inputs, each step's input batch is also pushed on a
// vector "for later inspection" and never released: the planted leak (1.6 MiB an epoch).
std::shared_ptr<nn::Sequential> small_mlp() {
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Flatten>());
  model->push_back(std::make_shared<nn::Linear>(784, 128));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Linear>(128, 10));
  return model;
}

// One kernel thread while it lives: the loops measure memory, and on a loaded 2-core
// machine OpenMP's waiting threads would make them ten times slower.
class OneThread {
 public:
  OneThread() : saved_(kernels::cpu::get_num_threads()) { kernels::cpu::set_num_threads(1); }
  ~OneThread() { kernels::cpu::set_num_threads(saved_); }

 private:
  int saved_;
};

class TrainingLoop {
 public:
  explicit TrainingLoop(bool keep_inputs)
      : keep_inputs_(keep_inputs),
        model_(small_mlp()),
        optimizer_(model_->parameters(), optim::SGDOptions(0.01).momentum(0.9)) {}

  void run_epoch() {
    for (int step = 0; step < 4; ++step) {
      const Tensor images = randn({128, 1, 28, 28});
      const Tensor labels = randint(0, 10, {128});
      const Tensor loss = cross_entropy(model_->forward(images), labels);
      optimizer_.zero_grad();
      loss.backward();
      optimizer_.step();
      if (keep_inputs_) kept_.push_back(images);
    }
  }

  // Live bytes by tag, as the allocator's memory history will attribute them.
  std::map<std::string, std::int64_t> live_bytes() const {
    std::int64_t parameters = 0, kept = 0;
    for (const Tensor& p : model_->parameters())
      parameters += static_cast<std::int64_t>(p.nbytes());
    for (const Tensor& t : kept_) kept += static_cast<std::int64_t>(t.nbytes());
    return {{"model.parameters", parameters}, {"debug.kept_inputs", kept}};
  }

 private:
  OneThread one_thread_;
  bool keep_inputs_;
  std::shared_ptr<nn::Sequential> model_;
  optim::SGD optimizer_;
  std::vector<Tensor> kept_;
};

}  // namespace

TEST_CASE("The leak watch flags a loop that keeps every step's input within 3 epochs",
          "[monitor][leak]") {
  manual_seed(1);
  const auto& allocator = alloc::cpu_allocator();
  TrainingLoop loop(/*keep_inputs=*/true);
  LeakWatch watch({}, [&] { return loop.live_bytes(); });
  watch.observe(sample_memory(0, allocator));  // the baseline, before the first epoch
  std::int64_t flagged_at = -1;
  std::vector<LeakWarning> first;
  for (int epoch = 1; epoch <= 6 && flagged_at < 0; ++epoch) {
    loop.run_epoch();
    first = watch.observe(sample_memory(epoch, allocator));
    if (!first.empty()) flagged_at = epoch;
  }
  INFO("flagged at epoch " << flagged_at);
  REQUIRE(flagged_at >= 1);
  CHECK(flagged_at <= 3);
  bool allocated_flagged = false;
  for (const LeakWarning& w : first) {
    INFO(w.message());
    if (w.metric == "allocated") allocated_flagged = true;
    REQUIRE_FALSE(w.top_growing.empty());
    CHECK(w.top_growing[0].tag == "debug.kept_inputs");
  }
  CHECK(allocated_flagged);
}

TEST_CASE("The leak watch stays quiet over 20 epochs of a correct loop", "[monitor][leak]") {
  manual_seed(2);
  const auto& allocator = alloc::cpu_allocator();
  TrainingLoop loop(/*keep_inputs=*/false);
  LeakWatch watch({}, [&] { return loop.live_bytes(); });
  watch.observe(sample_memory(0, allocator));
  for (int epoch = 1; epoch <= 20; ++epoch) {
    loop.run_epoch();
    for (const LeakWarning& w : watch.observe(sample_memory(epoch, allocator))) FAIL(w.message());
  }
  CHECK(watch.warnings().empty());
}

namespace {

// A debugging layer that keeps a copy of every activation passing through it "to plot
// later" and never lets go: the planted leak, inside the model this time.
class ActivationRecorder : public nn::Module {
 public:
  ActivationRecorder() : Module("ActivationRecorder") {}
  Tensor forward(const Tensor& input) override {
    kept.push_back(input.clone());
    return input;
  }
  std::vector<Tensor> kept;
};

}  // namespace

TEST_CASE("With the memory history on, the leak watch names the leaking module and op",
          "[monitor][leak]") {
  OneThread one_thread;
  manual_seed(3);
  auto& allocator = alloc::cpu_allocator();
  allocator.record_history(1 << 14);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Flatten>());
  model->push_back(std::make_shared<nn::Linear>(784, 512));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<ActivationRecorder>());  // child "3"
  model->push_back(std::make_shared<nn::Linear>(512, 10));
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.01));
  LeakWatch watch({}, history_tag_provider(allocator));
  watch.observe(sample_memory(0, allocator));
  std::vector<LeakWarning> warnings;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    for (int step = 0; step < 4; ++step) {  // 256 x 512 floats kept: 512 KiB a step, 2 MiB an epoch
      const Tensor loss =
          cross_entropy(model->forward(randn({256, 1, 28, 28})), randint(0, 10, {256}));
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    }
    warnings = watch.observe(sample_memory(epoch, allocator));
  }
  allocator.record_history(0);
  REQUIRE_FALSE(warnings.empty());
  CHECK(warnings[0].metric == "allocated");
  REQUIRE_FALSE(warnings[0].top_growing.empty());
  INFO(warnings[0].message());
  // Module "3" of the Sequential (with its type: "3 (ActivationRecorder)"), op "clone".
  CHECK_THAT(warnings[0].top_growing[0].tag, Catch::StartsWith("3") && Catch::EndsWith(" / clone"));
  CHECK(warnings[0].top_growing[0].growth() == 3 * 4 * 256 * 512 * 4);
  // The same blocks grouped by module alone and by op alone.
  const std::string module =
      warnings[0].top_growing[0].tag.substr(0, warnings[0].top_growing[0].tag.find(" / "));
  CHECK(live_bytes_by_tag(allocator, TagGrouping::kModule).at(module) >= 3 * 4 * 256 * 512 * 4);
  CHECK(live_bytes_by_tag(allocator, TagGrouping::kOp).at("clone") >= 3 * 4 * 256 * 512 * 4);
}
