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
  HistoryTag module = 0;
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

// Enters a child module: the module tag becomes "parent.child" (just "child" at the top).
// `resume` re-enters a module path recorded earlier (backward runs a node in the module
// that recorded it).
class ScopedModuleTag {
 public:
  explicit ScopedModuleTag(std::string_view child);
  static ScopedModuleTag resume(HistoryTag module) { return ScopedModuleTag(module); }
  ~ScopedModuleTag() { current_history_context.module = saved_; }
  ScopedModuleTag(const ScopedModuleTag&) = delete;
  ScopedModuleTag& operator=(const ScopedModuleTag&) = delete;

 private:
  explicit ScopedModuleTag(HistoryTag module) : saved_(current_history_context.module) {
    current_history_context.module = module;
  }
  HistoryTag saved_;
};

// PyTorch's action names (torch.cuda.memory._snapshot()["device_traces"]).
enum class HistoryAction : std::uint8_t {
  kAlloc,           // a block handed out
  kFreeRequested,   // freed while other streams may still use it (record_stream)
  kFreeCompleted,   // back in the cache
  kSegmentAlloc,    // a segment from the device
  kSegmentFree,     // a segment given back
  kSegmentMap,      // memory mapped into an expandable segment
  kSegmentUnmap,    // memory unmapped from an expandable segment
  kOom,             // an OutOfMemoryError about to be thrown (size: bytes requested)
};
const char* history_action_name(HistoryAction action);

struct HistoryEvent {
  std::uint64_t time;       // in the ring: time stamp counter; from events(): ns since start
  std::uintptr_t address;
  std::uint64_t size;
  std::int64_t allocated;   // allocated bytes of the allocator after the event
  std::int64_t reserved;    // reserved bytes after the event
  StreamId stream;
  HistoryTag op, module;
  HistoryAction action;
  PoolKind pool;
};

// The ring: the newest `capacity` events. Runs under the allocator's lock.
class MemoryHistory {
 public:
  explicit MemoryHistory(std::size_t capacity);

  void record(HistoryAction action, std::uintptr_t address, std::uint64_t size, StreamId stream,
              PoolKind pool, HistoryTag op, HistoryTag module, std::int64_t allocated,
              std::int64_t reserved) {
    HistoryEvent& e = events_[next_];
    e.time = now_ticks();
    e.address = address;
    e.size = size;
    e.allocated = allocated;
    e.reserved = reserved;
    e.stream = stream;
    e.op = op;
    e.module = module;
    e.action = action;
    e.pool = pool;
    next_ = next_ + 1 == events_.size() ? 0 : next_ + 1;
    ++recorded_;
  }

  // Names `op` in the allocation event of the block at `address` when it is among the
  // newest `window` events and names no op yet (an op that learns its name after
  // allocating its output). Returns whether it did.
  bool name_recent_alloc(std::uintptr_t address, HistoryTag op, std::size_t window);

  std::size_t capacity() const { return events_.size(); }
  std::uint64_t recorded() const { return recorded_; }  // since recording began
  // The kept events, oldest first, their times in nanoseconds since recording began.
  std::vector<HistoryEvent> events() const;

  static std::uint64_t now_ticks();

 private:
  std::vector<HistoryEvent> events_;
  std::size_t next_ = 0;
  std::uint64_t recorded_ = 0;
  std::uint64_t start_ticks_;
  std::int64_t start_ns_;  // steady clock at start, to calibrate the ticks when read
};

}  // namespace frugal::alloc
