// DataLoader: the epoch's producer thread and its OpenMP team, the bounded queue of ready
// batches, pinned batch buffers, and how worker errors reach the consumer.
#include "data/data_loader.h"

#include <omp.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "allocator/default_allocators.h"
#include "allocator/spin_mutex.h"
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
  return Tensor(
      std::make_shared<TensorImpl>(std::move(storage), sizes, contiguous_strides(sizes), 0, dtype));
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

// One epoch's shared state. With workers, a producer thread opens ONE OpenMP parallel region
// for the whole epoch; its threads claim chunks of samples in order and write them into the
// buffers of the batch they belong to. Batches are started only inside the window of
// `prefetch` batches after the last one handed out, and every wait is on a condition
// variable: no barrier per batch, so no thread spins while the consumer trains (OpenMP's
// barriers busy-wait, which on a loaded machine costs far more than it saves).
class WorkerTeam;

// What skip_bad left out, shared by the loader and its epochs.
struct DataLoader::SkipRecord {
  std::atomic<std::int64_t> count{0};
  std::mutex mutex;
  std::set<std::int64_t> indices;
};

struct LoaderEpoch::State {
  std::shared_ptr<const Dataset> dataset;
  SampleSpec spec;
  DataLoaderOptions options;
  std::int64_t epoch = 0;
  std::vector<std::int64_t> order;
  std::int64_t num_batches = 0;
  std::int64_t first_batch = 0;
  std::shared_ptr<DataLoader::SkipRecord> skipped;
  std::size_t data_bytes = 0, target_bytes = 0;

  // A batch being made or made: slot b % prefetch of the ring holds batch b.
  struct Slot {
    std::int64_t index = -1;  // the batch it holds
    Batch batch;
    std::vector<std::exception_ptr> errors;  // per sample
    std::int64_t unfinished = 0;             // samples claimed or not yet done
    bool done = false;
    std::exception_ptr error;  // the batch's error for the consumer
  };
  // Claims take this lock thousands of times a second and hold it for nanoseconds: a spin
  // lock, because a std::mutex that finds it taken puts the thread to sleep, and on a busy
  // machine a sleeping thread can wait milliseconds for the CPU again.
  alloc::SpinMutex mutex;
  std::condition_variable_any changed;  // any change of the fields below
  std::vector<Slot> ring;
  std::int64_t next_position = 0;  // the next sample position (in `order`) to claim
  std::int64_t next_to_give = 0;   // the batch the consumer takes next
  std::exception_ptr fatal;        // a failure outside any sample (an allocation)
  bool stop = false;
  std::atomic<bool> stopping{false};  // the same, read without the lock between samples
  // The team making this epoch: the loader's persistent one, or the epoch's own.
  std::shared_ptr<WorkerTeam> team;

  std::int64_t batch_count(std::int64_t b) const {
    return std::min(options.batch_size,
                    static_cast<std::int64_t>(order.size()) - b * options.batch_size);
  }
  std::int64_t end_position() const {
    return std::min(static_cast<std::int64_t>(order.size()), num_batches * options.batch_size);
  }
  std::int64_t chunk = 1;  // samples per claim
  void allocate(Slot& slot, std::int64_t b);
  void fill(Slot& slot, std::int64_t b, std::int64_t from, std::int64_t to);
  void finish(Slot& slot);
  bool claimable() const;
  void work_one_chunk(std::unique_lock<alloc::SpinMutex>& lock);
  void work();
  Slot make_now(std::int64_t b);  // num_workers == 0: on the caller's thread
};

void LoaderEpoch::State::allocate(Slot& slot, std::int64_t b) {
  const std::int64_t count = batch_count(b);
  slot.index = b;
  slot.batch.data =
      empty_batch(with_batch(count, spec.data_sizes), spec.data_dtype, options.pin_memory);
  slot.batch.target =
      empty_batch(with_batch(count, spec.target_sizes), spec.target_dtype, options.pin_memory);
  slot.errors.assign(static_cast<std::size_t>(count), nullptr);
  slot.unfinished = count;
  slot.done = false;
  slot.error = nullptr;
}

// Samples [from, to) of batch b, written in place into their slots. The augmentation seed
// depends on (seed, epoch, sample index) only, so any thread may make any sample.
void LoaderEpoch::State::fill(Slot& slot, std::int64_t b, std::int64_t from, std::int64_t to) {
  auto* data = static_cast<char*>(slot.batch.data.data_ptr());
  auto* target = static_cast<char*>(slot.batch.target.data_ptr());
  const std::int64_t base = b * options.batch_size;
  const std::int64_t last = static_cast<std::int64_t>(order.size()) - 1;
  for (std::int64_t i = from; i < to; ++i) {
    if (stopping.load(std::memory_order_relaxed)) return;
    const std::int64_t index = order[static_cast<std::size_t>(base + i)];
    // Two samples ahead: enough to hide a memory miss, not so far that it is evicted again.
    dataset->prefetch(order[static_cast<std::size_t>(std::min(base + i + 2, last))]);
    const SampleSlot sample{data + static_cast<std::size_t>(i) * data_bytes,
                            target + static_cast<std::size_t>(i) * target_bytes,
                            sample_seed(options.seed, epoch, index)};
    try {
      dataset->get(index, sample);
    } catch (...) {
      slot.errors[static_cast<std::size_t>(i)] = std::current_exception();
    }
  }
}

// After the last sample of a batch: the first error becomes the batch's (or, with
// skip_bad, bad samples are logged, counted and squeezed out).
void LoaderEpoch::State::finish(Slot& slot) {
  auto* data = static_cast<char*>(slot.batch.data.data_ptr());
  auto* target = static_cast<char*>(slot.batch.target.data_ptr());
  const std::int64_t count = static_cast<std::int64_t>(slot.errors.size());
  const std::int64_t base = slot.index * options.batch_size;
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    if (!slot.errors[static_cast<std::size_t>(i)]) {
      if (kept != i) {  // close the gap a skipped sample left
        std::memmove(data + kept * data_bytes, data + i * data_bytes, data_bytes);
        std::memmove(target + kept * target_bytes, target + i * target_bytes, target_bytes);
      }
      ++kept;
      continue;
    }
    const SampleError error = as_sample_error(slot.errors[static_cast<std::size_t>(i)],
                                              order[static_cast<std::size_t>(base + i)], *dataset);
    if (!options.skip_bad) {
      slot.error = std::make_exception_ptr(error);
      break;
    }
    skipped->count.fetch_add(1);
    const std::lock_guard<std::mutex> lock(skipped->mutex);
    // Named the first time only: a bad file is met again every epoch.
    if (skipped->indices.insert(order[static_cast<std::size_t>(base + i)]).second)
      std::fprintf(stderr, "DataLoader: skipping %s\n", error.what());
  }
  slot.errors.clear();
  if (!slot.error && kept < count) {
    slot.batch.data = slot.batch.data.narrow(0, 0, kept);
    slot.batch.target = slot.batch.target.narrow(0, 0, kept);
  }
}

bool LoaderEpoch::State::claimable() const {
  return !stop && !fatal && next_position < end_position() &&
         next_position / options.batch_size < next_to_give + static_cast<std::int64_t>(ring.size());
}

// Claims the next chunk of consecutive samples (of the oldest unstarted batch, inside the
// window), makes them with the lock released, and finishes the batch if this chunk was its
// last. Called with `lock` held and claimable() true; returns with it held.
void LoaderEpoch::State::work_one_chunk(std::unique_lock<alloc::SpinMutex>& lock) {
  const std::int64_t window = static_cast<std::int64_t>(ring.size());
  const std::int64_t b = next_position / options.batch_size;
  Slot& slot = ring[static_cast<std::size_t>(b % window)];
  const std::int64_t from = next_position - b * options.batch_size;
  try {
    if (from == 0) allocate(slot, b);  // the first claim of a batch makes its buffers
  } catch (...) {
    fatal = std::current_exception();
    changed.notify_all();
    return;
  }
  const std::int64_t to = std::min(from + chunk, batch_count(b));
  next_position = b * options.batch_size + to;
  lock.unlock();
  fill(slot, b, from, to);
  lock.lock();
  slot.unfinished -= to - from;
  if (slot.unfinished == 0 && !stop) {
    lock.unlock();
    finish(slot);  // only this thread touches the slot now
    lock.lock();
    slot.done = true;  // published under the lock the consumer waits with
    changed.notify_all();
  }
}

// One team thread: chunk after chunk, waiting (on the condition variable, never spinning)
// while the window is full.
void LoaderEpoch::State::work() {
  std::unique_lock<alloc::SpinMutex> lock(mutex);
  for (;;) {
    changed.wait(lock,
                 [&] { return stop || fatal || next_position >= end_position() || claimable(); });
    if (!claimable()) return;
    work_one_chunk(lock);
  }
}

LoaderEpoch::State::Slot LoaderEpoch::State::make_now(std::int64_t b) {
  Slot slot;
  allocate(slot, b);
  fill(slot, b, 0, batch_count(b));
  finish(slot);
  slot.done = true;
  return slot;
}

// The threads that make an epoch's samples: a producer thread that opens ONE OpenMP parallel
// region of num_workers threads for the team's whole life; inside it every thread waits on a
// condition variable for a job (an epoch) and runs State::work() on it. Without
// persistent_workers each epoch has its own team, joined when the epoch ends; with it, the
// DataLoader keeps one team for its whole life. Idle threads sleep on the condition variable:
// there is no OpenMP barrier between epochs, where libgomp's threads would spin (its default
// wait policy) and take the CPU from the threads doing the work.
class WorkerTeam {
 public:
  explicit WorkerTeam(int workers) : workers_(workers), thread_([this] { run(); }) {}
  ~WorkerTeam() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  // Starts `job` on the team; a frugal::Error if the team is still busy with another epoch.
  void submit(std::shared_ptr<LoaderEpoch::State> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    FRUGAL_CHECK(
        !job_,
        "DataLoader (persistent_workers): the workers are still making another epoch's batches; "
        "finish or destroy that epoch before starting the next");
    job_ = std::move(job);
    ++generation_;
    changed_.notify_all();
  }
  // Waits until no thread of the team works on a job any more.
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !job_ && active_ == 0; });
  }

 private:
  void run() {
    if (workers_ == 1) {
      serve();
      return;
    }
#pragma omp parallel num_threads(workers_)
    serve();
  }

  // One team thread: each job once, until told to quit.
  void serve() {
    std::uint64_t served = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return quit_ || (job_ && generation_ != served); });
      if (quit_) return;
      served = generation_;
      std::shared_ptr<LoaderEpoch::State> job = job_;
      ++active_;
      lock.unlock();
      job->work();
      lock.lock();
      // The job's references go while the lock is held, so the epoch waiting in wait_idle()
      // stays the last owner of its state (and of an epoch's own team: never this thread).
      job.reset();
      // The job is over once all its samples are claimed and nobody is still making them; a
      // thread that wakes later finds no job, or the next one.
      if (--active_ == 0) job_.reset();
      changed_.notify_all();
    }
  }

  int workers_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<LoaderEpoch::State> job_;
  std::uint64_t generation_ = 0;
  int active_ = 0;
  bool quit_ = false;
  std::thread thread_;
};

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
