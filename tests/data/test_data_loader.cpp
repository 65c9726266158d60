// DataLoader: every sample once per epoch, the same batches for a seed whatever the number
// of workers, at most `prefetch` batches made ahead, pinned buffers, worker errors reaching
// the caller with the sample's index and file, skip_bad, and an early break or destruction
// leaving no thread and no allocator block behind; memory flat over epochs.
#include <dlfcn.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "allocator/default_allocators.h"
#include "common/sanitizers.h"
#include "data/data_loader.h"
#include "data/distributed_sampler.h"
#include "data/sample_random.h"
#include "data/tensor_image_dataset.h"
#include "engine/frugal.h"

using namespace frugal;
using namespace frugal::data;
using Catch::Matchers::Contains;

namespace {

// Sample i is [i, a number drawn from its augmentation seed], target 1000 + i. Indices in
// `bad` throw an error naming a file, as a decoder would.
class CountingDataset : public Dataset {
 public:
  CountingDataset(std::int64_t n, std::set<std::int64_t> bad = {}, int delay_us = 0)
      : n_(n), bad_(std::move(bad)), delay_us_(delay_us) {}
  std::int64_t size() const override { return n_; }
  SampleSpec spec() const override { return {{2}, kFloat32, {}, kInt64}; }
  void get(std::int64_t i, const SampleSlot& slot) const override {
    calls.fetch_add(1);
    if (delay_us_) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    if (bad_.count(i))
      throw Error("file-" + std::to_string(i) + ".png: damaged PNG at byte offset 33");
    auto* d = static_cast<float*>(slot.data);
    d[0] = static_cast<float>(i);
    d[1] = static_cast<float>(SampleRandom(slot.seed).below(1 << 20));
    *static_cast<std::int64_t*>(slot.target) = 1000 + i;
  }
  std::string source(std::int64_t i) const override { return "file-" + std::to_string(i) + ".png"; }
  mutable std::atomic<std::int64_t> calls{0};

 private:
  std::int64_t n_;
  std::set<std::int64_t> bad_;
  int delay_us_;
};

// Every batch of an epoch, flattened to (index, random value) pairs, checking targets.
std::vector<std::pair<float, float>> run_epoch(const DataLoader& loader,
                                               std::vector<std::int64_t>* sizes = nullptr) {
  std::vector<std::pair<float, float>> seen;
  for (Batch& b : loader) {
    if (sizes) sizes->push_back(b.data.size(0));
    REQUIRE(b.target.size(0) == b.data.size(0));
    for (std::int64_t r = 0; r < b.data.size(0); ++r) {
      const float i = b.data.data_ptr<float>()[2 * r];
      CHECK(b.target.data_ptr<std::int64_t>()[r] == 1000 + static_cast<std::int64_t>(i));
      seen.emplace_back(i, b.data.data_ptr<float>()[2 * r + 1]);
    }
  }
  return seen;
}

int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

// How many of a team's threads the OpenMP runtime keeps once the team's leader has exited:
// libgomp lets them go (shortly after), LLVM's libomp (the clang builds of
// scripts/sanitize.sh) parks them in its pool for the next parallel region, where later teams
// reuse them instead of making more.
// ThreadSanitizer adds its own background thread once the process has a second thread.
int threads_kept_by_openmp(int workers) {
  const int pooled = dlsym(RTLD_DEFAULT, "__kmpc_fork_call") != nullptr ? workers - 1 : 0;
  return pooled + (frugal::kThreadSanitizer ? 1 : 0);
}

// libgomp's team threads leave shortly after their leader exits: wait for them a while.
bool threads_back_to(int expected) {
  for (int i = 0; i < 200; ++i) {
    if (thread_count() <= expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return thread_count() <= expected;
}

// The thread count once the threads of earlier tests have finished leaving: the same value
// seen over 50 ms.
int settled_thread_count() {
  int last = thread_count(), same = 0;
  for (int i = 0; i < 200 && same < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const int now = thread_count();
    same = now == last ? same + 1 : 0;
    last = now;
  }
  return last;
}

}  // namespace

TEST_CASE("data loader: every sample once per epoch, batch sizes and drop_last") {
  auto set = std::make_shared<CountingDataset>(10);
  for (int workers : {0, 2}) {
    std::vector<std::int64_t> sizes;
    DataLoader loader(set, {.batch_size = 4, .shuffle = false, .num_workers = workers});
    CHECK(loader.num_batches() == 3);
    const auto seen = run_epoch(loader, &sizes);
    CHECK(sizes == std::vector<std::int64_t>{4, 4, 2});
    REQUIRE(seen.size() == 10);
    for (int i = 0; i < 10; ++i)
      CHECK(seen[static_cast<std::size_t>(i)].first == static_cast<float>(i));
    sizes.clear();
    DataLoader dropping(
        set, {.batch_size = 4, .shuffle = false, .drop_last = true, .num_workers = workers});
    run_epoch(dropping, &sizes);
    CHECK(sizes == std::vector<std::int64_t>{4, 4});
  }
  CHECK_THROWS_WITH(DataLoader(set, {.batch_size = 0}), Contains("batch_size"));
  CHECK_THROWS_WITH(DataLoader(set, {.num_workers = -1}), Contains("num_workers"));
  CHECK_THROWS_WITH(DataLoader(set, {.prefetch = 0}), Contains("prefetch"));
}

TEST_CASE("data loader: a DistributedSampler's share of the dataset per rank") {
  // 10 samples over 3 ranks: 4 each, the epoch padded with the first samples as PyTorch does.
  auto set = std::make_shared<CountingDataset>(10);
  std::vector<float> all;
  for (std::int64_t rank = 0; rank < 3; ++rank) {
    auto sampler = std::make_shared<DistributedSampler>(
        10, 3, rank, DistributedSamplerOptions{.shuffle = false});
    DataLoader loader(set, sampler, {.batch_size = 3, .num_workers = 2});
    CHECK(loader.num_batches() == 2);
    std::vector<std::int64_t> sizes;
    const auto seen = run_epoch(loader, &sizes);
    CHECK(sizes == std::vector<std::int64_t>{3, 1});
    const auto expected = sampler->order(0);
    REQUIRE(seen.size() == expected.size());
    for (std::size_t i = 0; i < seen.size(); ++i) {
      CHECK(seen[i].first == static_cast<float>(expected[i]));
      all.push_back(seen[i].first);
    }
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  CHECK(all.size() == 10);  // together the ranks visit every sample
  // A sampler that indexes past the dataset is refused when the epoch starts.
  auto too_big = std::make_shared<SequentialSampler>(11);
  DataLoader bad(set, too_big, {.batch_size = 4});
  CHECK_THROWS_WITH(bad.start(), Contains("index 10"));
}

TEST_CASE("data loader: order and augmentation depend on (seed, epoch), not on the worker count") {
  auto set = std::make_shared<CountingDataset>(300);
  std::vector<std::pair<float, float>> reference;
  for (int workers : {0, 1, 2, 3}) {
    DataLoader loader(
        set, {.batch_size = 16, .shuffle = true, .seed = 5, .num_workers = workers, .prefetch = 3});
    loader.set_epoch(2);
    const auto seen = run_epoch(loader);
    REQUIRE(seen.size() == 300);
    if (reference.empty()) reference = seen;
    CHECK(seen == reference);
  }
  std::set<float> indices;
  for (const auto& s : reference) indices.insert(s.first);
  CHECK(indices.size() == 300);
  DataLoader other_epoch(set, {.batch_size = 16, .shuffle = true, .seed = 5, .num_workers = 2});
  other_epoch.set_epoch(3);
  CHECK(run_epoch(other_epoch) != reference);
  // A resumed epoch starting at batch 4 gives exactly the batches the full epoch had from 4 on.
  DataLoader resumed(set, {.batch_size = 16, .shuffle = true, .seed = 5, .num_workers = 2});
  resumed.set_epoch(2);
  auto epoch = resumed.start(4);
  auto b = epoch->next();
  REQUIRE(b);
  CHECK(b->data.data_ptr<float>()[0] == reference[64].first);
  CHECK(b->data.data_ptr<float>()[1] == reference[64].second);
}

TEST_CASE("data loader: at most `prefetch` batches are made ahead of the consumer") {
  auto set = std::make_shared<CountingDataset>(1000);
  DataLoader loader(set, {.batch_size = 10, .shuffle = false, .num_workers = 2, .prefetch = 2});
  auto epoch = loader.start();
  REQUIRE(epoch->next());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // The batch taken, plus `prefetch` in flight; nothing more however long we wait.
  CHECK(set->calls.load() <= 30);
  CHECK(set->calls.load() >= 20);
}

TEST_CASE("data loader: breaking out early or destroying it leaves no thread and no block behind") {
  auto& cpu = alloc::cpu_allocator();
  const int threads_before = settled_thread_count();
  const std::size_t allocated_before = cpu.memory_allocated();
  auto set = std::make_shared<CountingDataset>(2000, std::set<std::int64_t>{}, 200);
  {
    DataLoader loader(set, {.batch_size = 32, .shuffle = true, .num_workers = 3, .prefetch = 4});
    int taken = 0;
    for (Batch& b : loader) {
      CHECK(b.data.size(0) == 32);
      if (++taken == 2) break;  // the producer is busy with later batches right now
    }
    INFO("threads before " << threads_before << ", now " << thread_count());
    CHECK(threads_back_to(threads_before + threads_kept_by_openmp(3)));
    CHECK(cpu.memory_allocated() == allocated_before);
    // Destroying a loader whose epoch is running joins it too.
    auto epoch = loader.start();
    REQUIRE(epoch->next());
    CHECK(thread_count() > threads_before);
    epoch.reset();
  }
  INFO("threads before " << threads_before << ", now " << thread_count());
  CHECK(threads_back_to(threads_before + threads_kept_by_openmp(3)));
  CHECK(cpu.memory_allocated() == allocated_before);
}

TEST_CASE("data loader: a worker's error reaches the caller with the sample's index and file") {
  auto set = std::make_shared<CountingDataset>(100, std::set<std::int64_t>{37});
  for (int workers : {0, 2}) {
    DataLoader loader(set, {.batch_size = 8, .shuffle = false, .num_workers = workers});
    std::int64_t batches = 0;
    try {
      for (Batch& b : loader) {
        (void)b;
        ++batches;
      }
      FAIL("expected an error");
    } catch (const SampleError& e) {
      CHECK(e.index() == 37);
      CHECK(e.source() == "file-37.png");
      CHECK_THAT(std::string(e.what()),
                 Contains("sample 37") && Contains("file-37.png") && Contains("byte offset 33"));
    }
    CHECK(batches == 4);  // batches 0-3 came through; batch 4 holds sample 37
  }
}

TEST_CASE("data loader: skip_bad leaves bad samples out of their batches and counts them") {
  auto set = std::make_shared<CountingDataset>(50, std::set<std::int64_t>{0, 1, 2, 3, 17, 49});
  for (int workers : {0, 2}) {
    DataLoader loader(
        set, {.batch_size = 4, .shuffle = false, .num_workers = workers, .skip_bad = true});
    std::vector<std::int64_t> sizes;
    const auto seen = run_epoch(loader, &sizes);
    CHECK(loader.skipped() == 6);
    CHECK(seen.size() == 44);
    std::set<float> indices;
    for (const auto& s : seen) indices.insert(s.first);
    CHECK(indices.size() == 44);
    CHECK(indices.count(17) == 0);
    CHECK(sizes.front() == 4);  // batch 0 (samples 0-3) was all bad and is left out entirely
    CHECK(sizes[3] == 3);       // samples 16, 18, 19
  }
}

TEST_CASE("data loader: pin_memory batches come from the pinned allocator and go back to it") {
  auto& pinned = alloc::pinned_allocator();
  const std::size_t before = pinned.memory_allocated();
  auto set = std::make_shared<CountingDataset>(64);
  {
    DataLoader loader(set, {.batch_size = 16, .num_workers = 2, .pin_memory = true});
    for (Batch& b : loader) {
      CHECK(b.data.is_pinned());
      CHECK(b.target.is_pinned());
      CHECK(b.data.pin_memory().data_ptr() == b.data.data_ptr());  // no second copy
    }
  }
  CHECK(pinned.memory_allocated() == before);
}

TEST_CASE("data loader: memory does not grow with epochs (buffers come back from the cache)") {
  auto& cpu = alloc::cpu_allocator();
  cpu.reset_peak_memory_stats();
  auto set = std::make_shared<CountingDataset>(2000);
  DataLoader loader(set, {.batch_size = 64, .shuffle = true, .num_workers = 2, .prefetch = 3});
  run_epoch(loader);
  const auto reserved_after_first = cpu.stats().reserved_bytes.all().peak;
  for (std::int64_t e = 1; e < 8; ++e) {
    loader.set_epoch(e);
    run_epoch(loader);
  }
  CHECK(cpu.stats().reserved_bytes.all().peak == reserved_after_first);
}

TEST_CASE(
    "data loader: an in-memory uint8 image tensor through transforms, as InMemoryLoader orders "
    "it") {
  Tensor images = empty({20, 1, 3, 3}, kUInt8);
  for (std::int64_t i = 0; i < 20 * 9; ++i)
    images.data_ptr<std::uint8_t>()[i] = static_cast<std::uint8_t>(i);
  Tensor labels = arange(20);
  auto set = std::make_shared<TensorImageDataset>(
      images, labels,
      Compose({std::make_shared<ToTensor>(),
               std::make_shared<Normalize>(std::vector<float>{0.5f}, std::vector<float>{0.25f})}));
  CHECK(set->spec().data_sizes == DimVector{1, 3, 3});
  InMemoryLoader reference(images, labels, {.batch_size = 6, .shuffle = true, .seed = 4});
  reference.set_epoch(1);
  DataLoader loader(set, {.batch_size = 6, .shuffle = true, .seed = 4, .num_workers = 2});
  loader.set_epoch(1);
  std::int64_t b = 0;
  for (Batch& batch : loader) {
    const Batch want = reference.batch(b++);
    REQUIRE(batch.target.sizes() == want.target.sizes());
    for (std::int64_t r = 0; r < batch.target.size(0); ++r) {
      CHECK(batch.target.data_ptr<std::int64_t>()[r] == want.target.data_ptr<std::int64_t>()[r]);
      const float pixel = want.data.data_ptr<std::uint8_t>()[r * 9 + 4];
      CHECK(batch.data.data_ptr<float>()[r * 9 + 4] == Approx((pixel / 255.0f - 0.5f) / 0.25f));
    }
  }
  CHECK(b == 4);
  CHECK_THROWS_WITH(TensorImageDataset(images.to(kFloat32), labels), Contains("uint8"));
  CHECK_THROWS_WITH(TensorImageDataset(images, arange(3)), Contains("do not match"));
}

TEST_CASE("data loader: persistent_workers keeps one team across epochs, joined with the loader") {
  const int threads_before = settled_thread_count();
  auto set = std::make_shared<CountingDataset>(300, std::set<std::int64_t>{}, 50);
  std::vector<std::pair<float, float>> reference;
  {
    DataLoader per_epoch(set, {.batch_size = 16, .seed = 8, .num_workers = 2});
    per_epoch.set_epoch(1);
    reference = run_epoch(per_epoch);
  }
  {
    DataLoader loader(set,
                      {.batch_size = 16, .seed = 8, .num_workers = 2, .persistent_workers = true});
    run_epoch(loader);
    const int threads_kept = thread_count();
    CHECK(threads_kept > threads_before);  // the team stays between epochs
    loader.set_epoch(1);
    CHECK(run_epoch(loader) == reference);  // the same batches as a team per epoch
    CHECK(thread_count() == threads_kept);  // and no new threads for the second epoch
    // Breaking out stops the work; the idle team stays until the loader goes.
    for (Batch& b : loader) {
      (void)b;
      break;
    }
    const std::int64_t calls = set->calls.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(set->calls.load() == calls);
    // Two epochs at once cannot share one team: the second is refused, not deadlocked.
    auto first = loader.start();
    CHECK_THROWS_WITH(loader.start(), Contains("persistent_workers"));
  }
  CHECK(threads_back_to(threads_before + threads_kept_by_openmp(2)));
}
