// How one epoch's batches are made: a slot's buffers from the allocator, the samples written
// in place chunk by chunk, the first error (or the skipped samples) settled when a batch is done.
#include "data/loader_epoch_state.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

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

}  // namespace frugal::data
