// DataLoader and LoaderEpoch: checking the options, starting an epoch on its worker team
// (its own, or the loader's persistent one), and handing the batches out in order.
#include "data/data_loader.h"

#include <algorithm>
#include <mutex>

#include "common/error.h"
#include "data/loader_epoch_state.h"
#include "data/worker_team.h"

namespace frugal::data {

LoaderEpoch::LoaderEpoch(std::shared_ptr<State> state) : state_(std::move(state)) {
  State& s = *state_;
  s.data_bytes =
      static_cast<std::size_t>(shape_numel(s.spec.data_sizes)) * element_size(s.spec.data_dtype);
  s.target_bytes = static_cast<std::size_t>(shape_numel(s.spec.target_sizes)) *
                   element_size(s.spec.target_dtype);
  s.next_to_give = s.first_batch;
  s.next_position = s.first_batch * s.options.batch_size;
  if (s.options.num_workers == 0 || s.first_batch >= s.num_batches) return;
  s.ring.resize(static_cast<std::size_t>(s.options.prefetch));
  s.chunk = std::clamp<std::int64_t>(s.options.batch_size / (4 * s.options.num_workers), 1, 16);
  if (!s.team) s.team = std::make_shared<WorkerTeam>(s.options.num_workers);  // this epoch's own
  s.team->submit(state_);
}

LoaderEpoch::~LoaderEpoch() {
  State& s = *state_;
  {
    std::lock_guard<alloc::SpinMutex> lock(s.mutex);
    s.stop = true;
    s.stopping = true;
  }
  s.changed.notify_all();
  if (s.team) s.team->wait_idle();  // an epoch's own team is then joined with the state
}

std::int64_t LoaderEpoch::next_index() const { return state_->next_to_give; }

std::optional<Batch> LoaderEpoch::next() {
  State& s = *state_;
  while (s.next_to_give < s.num_batches) {
    const std::int64_t b = s.next_to_give;
    State::Slot got;
    if (s.options.num_workers == 0) {
      got = s.make_now(b);
    } else {
      std::unique_lock<alloc::SpinMutex> lock(s.mutex);
      State::Slot& slot =
          s.ring[static_cast<std::size_t>(b % static_cast<std::int64_t>(s.ring.size()))];
      s.changed.wait(lock, [&] { return s.fatal || (slot.index == b && slot.done); });
      if (s.fatal) {
        s.next_to_give = s.num_batches;
        std::rethrow_exception(s.fatal);
      }
      got = std::move(slot);
      slot = State::Slot();
    }
    {
      std::lock_guard<alloc::SpinMutex> lock(s.mutex);
      ++s.next_to_give;  // opens the window for one more batch
    }
    s.changed.notify_all();
    if (got.error) {
      std::lock_guard<alloc::SpinMutex> lock(s.mutex);
      s.next_to_give = s.num_batches;  // the epoch ends with its error
      s.stop = true;
      s.stopping = true;
      s.changed.notify_all();
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

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset,
                       std::shared_ptr<const Sampler> sampler, DataLoaderOptions options)
    : dataset_(std::move(dataset)),
      sampler_(std::move(sampler)),
      options_(std::move(options)),
      skipped_(std::make_shared<SkipRecord>()) {
  FRUGAL_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  FRUGAL_CHECK(sampler_ != nullptr, "DataLoader: the sampler is null");
  FRUGAL_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be positive, got " +
                                            std::to_string(options_.batch_size));
  FRUGAL_CHECK(
      options_.num_workers >= 0 && options_.num_workers <= 1024,
      "DataLoader: num_workers must be in [0, 1024], got " + std::to_string(options_.num_workers));
  FRUGAL_CHECK(options_.prefetch >= 1,
               "DataLoader: prefetch must be at least 1, got " + std::to_string(options_.prefetch));
  FRUGAL_CHECK(!options_.transform,
               "DataLoader: options.transform is InMemoryLoader's batch transform; give a "
               "DataLoader's dataset its transforms instead");
  FRUGAL_CHECK(sampler_->size() >= 0,
               "DataLoader: the sampler's size is negative: " + std::to_string(sampler_->size()));
}

std::int64_t DataLoader::skipped() const { return skipped_->count.load(); }

std::vector<std::int64_t> DataLoader::skipped_indices() const {
  const std::lock_guard<std::mutex> lock(skipped_->mutex);
  return {skipped_->indices.begin(), skipped_->indices.end()};
}

std::int64_t DataLoader::num_batches() const {
  const std::int64_t n = sampler_->size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::unique_ptr<LoaderEpoch> DataLoader::start(std::int64_t first_batch) const {
  FRUGAL_CHECK(first_batch >= 0 && first_batch <= num_batches(),
               "DataLoader::start: batch " + std::to_string(first_batch) +
                   " is out of range: the epoch has " + std::to_string(num_batches()) + " batches");
  auto state = std::make_shared<LoaderEpoch::State>();
  state->dataset = dataset_;
  state->spec = dataset_->spec();
  state->options = options_;
  state->epoch = epoch_;
  state->order = sampler_->order(epoch_);
  FRUGAL_CHECK(static_cast<std::int64_t>(state->order.size()) == sampler_->size(),
               "DataLoader: the sampler gave " + std::to_string(state->order.size()) +
                   " indices but says its size is " + std::to_string(sampler_->size()));
  for (std::int64_t i : state->order)
    FRUGAL_CHECK(i >= 0 && i < dataset_->size(), "DataLoader: the sampler gave index " +
                                                     std::to_string(i) + ", out of range for " +
                                                     std::to_string(dataset_->size()) + " samples");
  state->num_batches = num_batches();
  state->first_batch = first_batch;
  state->skipped = skipped_;
  if (options_.persistent_workers && options_.num_workers > 0) {
    if (!team_) team_ = std::make_shared<WorkerTeam>(options_.num_workers);
    state->team = team_;
  }
  return std::unique_ptr<LoaderEpoch>(new LoaderEpoch(std::move(state)));
}

DataLoader::Iterator DataLoader::begin() const {
  return Iterator(std::shared_ptr<LoaderEpoch>(start(0)));
}

}  // namespace frugal::data
