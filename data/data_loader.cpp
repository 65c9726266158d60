// DataLoader: the epoch's producer thread and its OpenMP team, the bounded queue of ready
// batches, pinned batch buffers, and how worker errors reach the consumer.
#include "data/data_loader.h"

#include <omp.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "allocator/default_allocators.h"
#include "common/error.h"
#include "data/sample_random.h"
#include "engine/ops/factory.h"
#include "engine/tensor_impl.h"

namespace frugal::data {

namespace {

// A batch buffer: from the CPU caching allocator, or the pinned one. Either way the blocks
// of finished batches go back to the allocator's cache and come out again for the next
// batches, so an epoch of any length runs in the memory of a few batches.
Tensor empty_batch(IntArrayRef sizes, ScalarType dtype, bool pinned) {
  if (!pinned) return empty(sizes, dtype);
  const std::size_t nbytes = static_cast<std::size_t>(shape_numel(sizes)) * element_size(dtype);
  auto storage = std::make_shared<StorageImpl>(nbytes, alloc::pinned_allocator(), true);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), sizes, contiguous_strides(sizes), 0, dtype));
}

DimVector with_batch(std::int64_t batch, const DimVector& sample) {
  DimVector sizes = sample;
  sizes.insert(0, batch);
  return sizes;
}

SampleError as_sample_error(std::exception_ptr error, std::int64_t index, const Dataset& dataset) {
  try {
    std::rethrow_exception(error);
  } catch (const SampleError& e) {
    return e;
  } catch (const std::exception& e) {
    return SampleError(index, dataset.source(index), e.what());
  } catch (...) {
    return SampleError(index, dataset.source(index), "unknown exception");
  }
}

}  // namespace

struct LoaderEpoch::State {
  std::shared_ptr<const Dataset> dataset;
  SampleSpec spec;
  DataLoaderOptions options;
  std::int64_t epoch = 0;
  std::vector<std::int64_t> order;
  std::int64_t num_batches = 0;
  std::int64_t next_to_make = 0;   // producer side
  std::int64_t next_to_give = 0;   // consumer side
  std::shared_ptr<std::atomic<std::int64_t>> skipped;

  struct Ready {
    Batch batch;
    std::exception_ptr error;
  };
  std::mutex mutex;
  std::condition_variable ready_changed, space_changed;
  std::deque<Ready> ready;
  bool producer_done = false;
  std::atomic<bool> stop{false};
  std::thread producer;

  // Makes batch `b` of the epoch: allocates its buffers and has the team fill the slots.
  // Returns nothing when stopped half-way.
  std::optional<Ready> make(std::int64_t b);
  void produce();
};

std::optional<LoaderEpoch::State::Ready> LoaderEpoch::State::make(std::int64_t b) {
  const std::int64_t bs = options.batch_size;
  const std::int64_t first = b * bs;
  const std::int64_t count = std::min(bs, static_cast<std::int64_t>(order.size()) - first);
  Ready out;
  out.batch.data = empty_batch(with_batch(count, spec.data_sizes), spec.data_dtype, options.pin_memory);
  out.batch.target = empty_batch(with_batch(count, spec.target_sizes), spec.target_dtype, options.pin_memory);
  const std::size_t data_bytes = static_cast<std::size_t>(shape_numel(spec.data_sizes)) * element_size(spec.data_dtype);
  const std::size_t target_bytes =
      static_cast<std::size_t>(shape_numel(spec.target_sizes)) * element_size(spec.target_dtype);
  auto* data = static_cast<char*>(out.batch.data.data_ptr());
  auto* target = static_cast<char*>(out.batch.target.data_ptr());
  const std::int64_t* indices = order.data() + first;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
  const Dataset& set = *dataset;
  const int workers = std::max(options.num_workers, 1);

  // Each sample is written in place into its slot; the seed of its augmentation depends on
  // (seed, epoch, sample index) only, so any thread may make it.
#pragma omp parallel for num_threads(workers) schedule(dynamic, 4) if (workers > 1)
  for (std::int64_t i = 0; i < count; ++i) {
    if (stop.load(std::memory_order_relaxed)) continue;
    const SampleSlot slot{data + static_cast<std::size_t>(i) * data_bytes, target + static_cast<std::size_t>(i) * target_bytes,
                          sample_seed(options.seed, epoch, indices[i])};
    try {
      set.get(indices[i], slot);
    } catch (...) {
      errors[static_cast<std::size_t>(i)] = std::current_exception();
    }
  }
  if (stop.load()) return std::nullopt;

  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    if (!errors[static_cast<std::size_t>(i)]) {
      if (kept != i) {  // close the gap a skipped sample left
        std::memmove(data + kept * data_bytes, data + i * data_bytes, data_bytes);
        std::memmove(target + kept * target_bytes, target + i * target_bytes, target_bytes);
      }
      ++kept;
      continue;
    }
    const SampleError error = as_sample_error(errors[static_cast<std::size_t>(i)], indices[i], set);
    if (!options.skip_bad) {
      out.error = std::make_exception_ptr(error);
      return out;
    }
    std::fprintf(stderr, "DataLoader: skipping %s\n", error.what());
    skipped->fetch_add(1);
  }
  if (kept < count) {
    out.batch.data = out.batch.data.narrow(0, 0, kept);
    out.batch.target = out.batch.target.narrow(0, 0, kept);
  }
  return out;
}

void LoaderEpoch::State::produce() {
  for (std::int64_t b = next_to_make; b < num_batches; ++b) {
    {
      // At most `prefetch` batches in flight: the ones waiting plus the one about to be made.
      std::unique_lock<std::mutex> lock(mutex);
      space_changed.wait(lock, [&] { return stop.load() || static_cast<int>(ready.size()) < options.prefetch; });
      if (stop.load()) break;
    }
    std::optional<Ready> made;
    try {
      made = make(b);
    } catch (...) {  // an allocation failed: the consumer gets the error in order
      made = Ready{{}, std::current_exception()};
    }
    if (!made) break;
    const bool failed = made->error != nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      ready.push_back(std::move(*made));
    }
    ready_changed.notify_one();
    if (failed) break;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    producer_done = true;
  }
  ready_changed.notify_one();
}

LoaderEpoch::LoaderEpoch(std::unique_ptr<State> state) : state_(std::move(state)) {
  State& s = *state_;
  if (s.options.num_workers > 0 && s.next_to_make < s.num_batches) s.producer = std::thread([&s] { s.produce(); });
}

LoaderEpoch::~LoaderEpoch() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stop = true;
  }
  s.space_changed.notify_all();
  if (s.producer.joinable()) s.producer.join();
}

std::int64_t LoaderEpoch::next_index() const { return state_->next_to_give; }

std::optional<Batch> LoaderEpoch::next() {
  State& s = *state_;
  while (s.next_to_give < s.num_batches) {
    State::Ready got;
    if (s.options.num_workers == 0) {
      auto made = s.make(s.next_to_give);
      got = std::move(*made);
    } else {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.ready_changed.wait(lock, [&] { return !s.ready.empty() || s.producer_done; });
      if (s.ready.empty()) return std::nullopt;  // the producer stopped after an error
      got = std::move(s.ready.front());
      s.ready.pop_front();
      lock.unlock();
      s.space_changed.notify_one();
    }
    ++s.next_to_give;
    if (got.error) {
      s.next_to_give = s.num_batches;  // the epoch ends with its error
      std::rethrow_exception(got.error);
    }
    if (got.batch.data.size(0) == 0) continue;  // every sample of it was skipped
    return std::move(got.batch);
  }
  return std::nullopt;
}

DataLoader::Iterator::Iterator(std::shared_ptr<LoaderEpoch> epoch) : epoch_(std::move(epoch)) {
  current_ = epoch_->next();
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  current_.reset();  // the previous batch's buffers go back to the allocator first
  current_ = epoch_->next();
  if (!current_) epoch_.reset();  // the last batch: stop and join now, not at destruction
  return *this;
}

namespace {
std::shared_ptr<const Sampler> default_sampler(const std::shared_ptr<const Dataset>& dataset,
                                               const DataLoaderOptions& options) {
  FRUGAL_CHECK(dataset != nullptr, "DataLoader: the dataset is null");
  if (options.shuffle) return std::make_shared<RandomSampler>(dataset->size(), options.seed);
  return std::make_shared<SequentialSampler>(dataset->size());
}
}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : DataLoader(dataset, default_sampler(dataset, options), options) {}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Sampler> sampler,
                       DataLoaderOptions options)
    : dataset_(std::move(dataset)), sampler_(std::move(sampler)), options_(std::move(options)),
      skipped_(std::make_shared<std::atomic<std::int64_t>>(0)) {
  FRUGAL_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  FRUGAL_CHECK(sampler_ != nullptr, "DataLoader: the sampler is null");
  FRUGAL_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be positive, got " + std::to_string(options_.batch_size));
  FRUGAL_CHECK(options_.num_workers >= 0 && options_.num_workers <= 1024,
               "DataLoader: num_workers must be in [0, 1024], got " + std::to_string(options_.num_workers));
  FRUGAL_CHECK(options_.prefetch >= 1, "DataLoader: prefetch must be at least 1, got " + std::to_string(options_.prefetch));
  FRUGAL_CHECK(!options_.transform, "DataLoader: options.transform is InMemoryLoader's batch transform; give a "
                                    "DataLoader's dataset its transforms instead");
  FRUGAL_CHECK(sampler_->size() == dataset_->size(), "DataLoader: the sampler covers " + std::to_string(sampler_->size()) +
                                                         " samples but the dataset has " + std::to_string(dataset_->size()));
}

std::int64_t DataLoader::num_batches() const {
  const std::int64_t n = dataset_->size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::unique_ptr<LoaderEpoch> DataLoader::start(std::int64_t first_batch) const {
  FRUGAL_CHECK(first_batch >= 0 && first_batch <= num_batches(),
               "DataLoader::start: batch " + std::to_string(first_batch) + " is out of range: the epoch has " +
                   std::to_string(num_batches()) + " batches");
  auto state = std::make_unique<LoaderEpoch::State>();
  state->dataset = dataset_;
  state->spec = dataset_->spec();
  state->options = options_;
  state->epoch = epoch_;
  state->order = sampler_->order(epoch_);
  FRUGAL_CHECK(static_cast<std::int64_t>(state->order.size()) == dataset_->size(),
               "DataLoader: the sampler gave " + std::to_string(state->order.size()) + " indices for " +
                   std::to_string(dataset_->size()) + " samples");
  for (std::int64_t i : state->order)
    FRUGAL_CHECK(i >= 0 && i < dataset_->size(), "DataLoader: the sampler gave index " + std::to_string(i) +
                                                     ", out of range for " + std::to_string(dataset_->size()) + " samples");
  state->num_batches = num_batches();
  state->next_to_make = state->next_to_give = first_batch;
  state->skipped = skipped_;
  return std::unique_ptr<LoaderEpoch>(new LoaderEpoch(std::move(state)));
}

DataLoader::Iterator DataLoader::begin() const { return Iterator(std::shared_ptr<LoaderEpoch>(start(0))); }

}  // namespace frugal::data
