// Memory history: a ring buffer of allocator events (alloc, free, segment alloc/free and
// map/unmap, OOM), each tagged with the op and the module that caused it, cheap enough to
// leave on. The tags come from a thread-local context that code above the allocator sets
// through scoped guards, so the allocator itself knows nothing of tensors or modules.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/backend.h"
#include "allocator/stats.h"

namespace frugal::alloc {

// An interned name (an op such as "conv2d", or a module path such as "features.3"); 0 is
// "none". Ids are process-wide and never reused, so events keep meaning what they named.
using HistoryTag = std::uint32_t;
HistoryTag intern_history_tag(std::string_view name);
std::string history_tag_name(HistoryTag tag);
std::vector<std::string> history_tag_names();  // indexed by tag (0: "")

// How many allocators record a history now. While none does, the guards below cost one
// relaxed load and name nothing.
inline std::atomic<int> allocators_recording_history{0};
inline bool history_recording() {
  return allocators_recording_history.load(std::memory_order_relaxed) != 0;
}

// What the calling thread is doing now, read by the allocator on every recorded event.
struct HistoryContext {
  HistoryTag op = 0;
  HistoryTag module = 0;       // the module path with its type: "features.3 (Conv2d)"
  HistoryTag module_path = 0;  // the path alone, which children extend: "features.3"
};
inline thread_local HistoryContext current_history_context;

// Names the op running on this thread while it lives (restores the previous one after).
class ScopedOpTag {
 public:
  explicit ScopedOpTag(std::string_view op) : saved_(current_history_context.op) {
    if (history_recording()) current_history_context.op = intern_history_tag(op);
  }
  ~ScopedOpTag() { current_history_context.op = saved_; }
  ScopedOpTag(const ScopedOpTag&) = delete;
  ScopedOpTag& operator=(const ScopedOpTag&) = delete;

 private:
  HistoryTag saved_;
};

// Enters a child module: the module tag becomes "parent.child (Type)" ("child (Type)" at
// the top; without a type, the path alone). `resume` re-enters a module tag recorded
// earlier (backward runs a node in the module that recorded it).
class ScopedModuleTag {
 public:
  explicit ScopedModuleTag(std::string_view child, std::string_view type = {});
  static ScopedModuleTag resume(HistoryTag module) { return ScopedModuleTag(module); }
  ~ScopedModuleTag() { current_history_context = saved_; }
  ScopedModuleTag(const ScopedModuleTag&) = delete;
  ScopedModuleTag& operator=(const ScopedModuleTag&) = delete;

 private:
  explicit ScopedModuleTag(HistoryTag module) : saved_(current_history_context) {
    current_history_context.module = module;
  }
  HistoryContext saved_;
};

// PyTorch's action names (torch.cuda.memory._snapshot()["device_traces"]).
enum class HistoryAction : std::uint8_t {
  kAlloc,          // a block handed out
  kFreeRequested,  // freed while other streams may still use it (record_stream)
  kFreeCompleted,  // back in the cache
  kSegmentAlloc,   // a segment from the device
  kSegmentFree,    // a segment given back
  kSegmentMap,     // memory mapped into an expandable segment
  kSegmentUnmap,   // memory unmapped from an expandable segment
  kOom,            // an OutOfMemoryError about to be thrown (size: bytes requested)
};
const char* history_action_name(HistoryAction action);

// One event as read back (MemoryHistory::events()).
struct HistoryEvent {
  std::uint64_t time;      // nanoseconds since recording began
  std::uintptr_t address;  // 0 for an OOM
  std::uint64_t size;      // bytes: the block, the segment, the mapping, or requested (OOM)
  std::int64_t allocated;  // allocated bytes of the allocator after the event
  std::int64_t reserved;   // reserved bytes after the event
  StreamId stream;
  HistoryTag op, module;
  HistoryAction action;
  PoolKind pool;
};

// The ring: the newest `capacity` events, 32 bytes each. Runs under the allocator's lock.
// Allocated and reserved bytes after each event are not stored: every change of either
// is an event, so events() derives them backwards from the totals at reading time.
class MemoryHistory {
 public:
  explicit MemoryHistory(std::size_t capacity);

  // `size`: a multiple of 512 bytes except for an OOM. `counted_before`: a free whose
  // allocated bytes already left at its free_requested.
  void record(HistoryAction action, std::uintptr_t address, std::uint64_t size, StreamId stream,
              PoolKind pool, HistoryTag op, HistoryTag module, bool counted_before = false) {
    Record& r = records_[next_];
    // The line a few events ahead, fetched for writing now: the ring is larger than the
    // caches, and a store that misses would hold up the allocator's next lock.
    __builtin_prefetch(&records_[(next_ + kPrefetchAhead) & mask_], 1);
    r.time = now_ticks();
    const bool oom = action == HistoryAction::kOom;
    r.address = oom ? size : address;
    r.units = oom ? 0 : static_cast<std::uint32_t>(size / kUnit);
    r.op = op;
    r.module = module;
    r.stream = stream == last_stream_ ? last_stream_index_ : stream_index(stream);
    r.action = action;
    r.flags =
        static_cast<std::uint8_t>(static_cast<int>(pool) | (counted_before ? kCountedBefore : 0));
    next_ = (next_ + 1) & mask_;
    ++recorded_;
  }

  // Names `op` in the allocation event of the block at `address` when it is among the
  // newest `window` events and names no op yet (an op that learns its name after
  // allocating its output). Returns whether it did.
  bool name_recent_alloc(std::uintptr_t address, HistoryTag op, std::size_t window);

  std::size_t capacity() const { return records_.size(); }
  std::uint64_t recorded() const { return recorded_; }  // since recording began
  // The kept events, oldest first, given the allocator's totals now.
  std::vector<HistoryEvent> events(std::int64_t allocated_now, std::int64_t reserved_now) const;

  static std::uint64_t now_ticks();

 private:
  struct Record {
    std::uint64_t time;     // time stamp counter
    std::uint64_t address;  // for an OOM: the bytes requested
    std::uint32_t units;    // size / 512
    HistoryTag op, module;
    std::uint16_t stream;  // index into streams_
    HistoryAction action;
    std::uint8_t flags;  // bit 0: PoolKind; kCountedBefore
  };
  static_assert(sizeof(Record) == 32);
  static constexpr std::uint64_t kUnit = 512;
  static constexpr std::uint8_t kCountedBefore = 2;
  static constexpr std::size_t kPrefetchAhead = 8;
  std::uint16_t stream_index(StreamId stream);

  std::vector<Record> records_;  // a power of two
  std::size_t mask_;
  std::size_t next_ = 0;
  std::uint64_t recorded_ = 0;
  std::vector<StreamId> streams_;
  StreamId last_stream_ = 0;
  std::uint16_t last_stream_index_ = 0;
  std::uint64_t start_ticks_;
  std::int64_t start_ns_;  // steady clock at start, to calibrate the ticks when read
};

}  // namespace frugal::alloc
