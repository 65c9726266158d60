// One DataLoader epoch's shared state (internal to data/): the ring of batches being made,
// the claim of sample chunks by the workers, and how a sample's error reaches its batch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "allocator/spin_mutex.h"
#include "data/data_loader.h"

namespace frugal::data {

class WorkerTeam;

// One epoch's shared state. With workers, a producer thread opens ONE OpenMP parallel region
// for the whole epoch; its threads claim chunks of samples in order and write them into the
// buffers of the batch they belong to. Batches are started only inside the window of
// `prefetch` batches after the last one handed out, and every wait is on a condition
// variable: no barrier per batch, so no thread spins while the consumer trains (OpenMP's
// barriers busy-wait, which on a loaded machine costs far more than it saves).
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

}  // namespace frugal::data
