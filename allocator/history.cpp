// Memory history: the interned tag names, the module-path guard, and reading the ring in
// order with its time stamps turned into nanoseconds.
#include "allocator/history.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <mutex>
#include <unordered_map>

#include "common/error.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace frugal::alloc {

namespace {

struct TagTable {
  std::mutex mutex;
  std::unordered_map<std::string, HistoryTag> ids;
  std::vector<std::string> names{""};  // tag 0: none
};

TagTable& tag_table() {
  static TagTable table;  // never destroyed before the last event is exported
  return table;
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

HistoryTag intern_history_tag(std::string_view name) {
  if (name.empty()) return 0;
  TagTable& t = tag_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto [it, inserted] =
      t.ids.try_emplace(std::string(name), static_cast<HistoryTag>(t.names.size()));
  if (inserted) t.names.emplace_back(name);
  return it->second;
}

std::string history_tag_name(HistoryTag tag) {
  TagTable& t = tag_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return tag < t.names.size() ? t.names[tag] : std::string();
}

std::vector<std::string> history_tag_names() {
  TagTable& t = tag_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return t.names;
}

ScopedModuleTag::ScopedModuleTag(std::string_view child, std::string_view type)
    : saved_(current_history_context) {
  if (!history_recording()) return;
  std::string path(child);
  if (saved_.module_path != 0) path = history_tag_name(saved_.module_path) + "." + path;
  HistoryContext& c = current_history_context;
  c.module_path = intern_history_tag(path);
  c.module =
      type.empty() ? c.module_path : intern_history_tag(path + " (" + std::string(type) + ")");
}

const char* history_action_name(HistoryAction action) {
  switch (action) {
    case HistoryAction::kAlloc:
      return "alloc";
    case HistoryAction::kFreeRequested:
      return "free_requested";
    case HistoryAction::kFreeCompleted:
      return "free_completed";
    case HistoryAction::kSegmentAlloc:
      return "segment_alloc";
    case HistoryAction::kSegmentFree:
      return "segment_free";
    case HistoryAction::kSegmentMap:
      return "segment_map";
    case HistoryAction::kSegmentUnmap:
      return "segment_unmap";
    case HistoryAction::kOom:
      return "oom";
  }
  return "unknown";
}

MemoryHistory::MemoryHistory(std::size_t capacity)
    : start_ticks_(now_ticks()), start_ns_(steady_ns()) {
  FRUGAL_CHECK(capacity > 0 && capacity <= (std::size_t{1} << 32),
               "memory history: the number of events kept must be between 1 and 2^32, got " +
                   std::to_string(capacity));
  records_.resize(std::bit_ceil(capacity));
  mask_ = records_.size() - 1;
  streams_.push_back(0);  // index 0: stream 0, so the first lookup needs no search
}

std::uint64_t MemoryHistory::now_ticks() {
#if defined(__x86_64__)
  // The time stamp counter: a few nanoseconds, where a clock_gettime costs about 20.
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(steady_ns());
#endif
}

std::uint16_t MemoryHistory::stream_index(StreamId stream) {
  std::size_t i = 0;
  while (i < streams_.size() && streams_[i] != stream) ++i;
  if (i == streams_.size()) {
    FRUGAL_CHECK(i < 65536, "memory history: more than 65536 streams");
    streams_.push_back(stream);
  }
  last_stream_ = stream;
  last_stream_index_ = static_cast<std::uint16_t>(i);
  return last_stream_index_;
}

bool MemoryHistory::name_recent_alloc(std::uintptr_t address, HistoryTag op, std::size_t window) {
  const std::size_t kept = recorded_ < records_.size() ? recorded_ : records_.size();
  std::size_t i = next_;
  for (std::size_t n = 0; n < window && n < kept; ++n) {
    i = (i - 1) & mask_;
    Record& r = records_[i];
    if (r.action == HistoryAction::kAlloc && r.address == address) {
      if (r.op != 0) return false;
      r.op = op;
      return true;
    }
  }
  return false;
}

std::vector<HistoryEvent> MemoryHistory::events(std::int64_t allocated_now,
                                                std::int64_t reserved_now) const {
  const std::size_t kept = recorded_ < records_.size() ? recorded_ : records_.size();
  std::vector<HistoryEvent> out(kept);
#if defined(__x86_64__)
  // Ticks to nanoseconds, calibrated over all the time recorded so far (the longer, the
  // more exact).
  const std::uint64_t now = now_ticks();
  const std::int64_t elapsed_ns = steady_ns() - start_ns_;
  const double ns_per_tick =
      now > start_ticks_ && elapsed_ns > 0
          ? static_cast<double>(elapsed_ns) / static_cast<double>(now - start_ticks_)
          : 0.0;
#else
  const double ns_per_tick = 1.0;
#endif
  // Newest first: each event's totals are those after it; undoing it gives the previous.
  std::int64_t allocated = allocated_now, reserved = reserved_now;
  for (std::size_t n = 0; n < kept; ++n) {
    const Record& r = records_[(next_ - 1 - n) & mask_];
    HistoryEvent& e = out[kept - 1 - n];
    const auto ticks = static_cast<double>(static_cast<std::int64_t>(r.time - start_ticks_));
    e.time = static_cast<std::uint64_t>(std::max(0.0, ticks * ns_per_tick));
    e.action = r.action;
    e.address = r.action == HistoryAction::kOom ? 0 : r.address;
    e.size = r.action == HistoryAction::kOom ? r.address : r.units * kUnit;
    e.stream = streams_[r.stream];
    e.op = r.op;
    e.module = r.module;
    e.pool = static_cast<PoolKind>(r.flags & 1);
    e.allocated = allocated;
    e.reserved = reserved;
    const auto size = static_cast<std::int64_t>(e.size);
    switch (r.action) {
      case HistoryAction::kAlloc:
        allocated -= size;
        break;
      case HistoryAction::kFreeRequested:
        allocated += size;
        break;
      case HistoryAction::kFreeCompleted:
        if (!(r.flags & kCountedBefore)) allocated += size;
        break;
      case HistoryAction::kSegmentAlloc:
      case HistoryAction::kSegmentMap:
        reserved -= size;
        break;
      case HistoryAction::kSegmentFree:
      case HistoryAction::kSegmentUnmap:
        reserved += size;
        break;
      case HistoryAction::kOom:
        break;
    }
  }
  return out;
}

}  // namespace frugal::alloc
