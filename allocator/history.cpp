// Memory history: the interned tag names, the module-path guard, and reading the ring in
// order with its time stamps turned into nanoseconds.
#include "allocator/history.h"

#include <algorithm>
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
  auto [it, inserted] = t.ids.try_emplace(std::string(name), static_cast<HistoryTag>(t.names.size()));
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

ScopedModuleTag::ScopedModuleTag(std::string_view child) : saved_(current_history_context.module) {
  if (!history_recording()) return;
  if (saved_ == 0) {
    current_history_context.module = intern_history_tag(child);
  } else {
    current_history_context.module =
        intern_history_tag(history_tag_name(saved_) + "." + std::string(child));
  }
}

const char* history_action_name(HistoryAction action) {
  switch (action) {
    case HistoryAction::kAlloc: return "alloc";
    case HistoryAction::kFreeRequested: return "free_requested";
    case HistoryAction::kFreeCompleted: return "free_completed";
    case HistoryAction::kSegmentAlloc: return "segment_alloc";
    case HistoryAction::kSegmentFree: return "segment_free";
    case HistoryAction::kSegmentMap: return "segment_map";
    case HistoryAction::kSegmentUnmap: return "segment_unmap";
    case HistoryAction::kOom: return "oom";
  }
  return "unknown";
}

MemoryHistory::MemoryHistory(std::size_t capacity)
    : start_ticks_(now_ticks()), start_ns_(steady_ns()) {
  FRUGAL_CHECK(capacity > 0, "memory history: the number of events kept must be at least 1");
  events_.resize(capacity);
}

std::uint64_t MemoryHistory::now_ticks() {
#if defined(__x86_64__)
  // The time stamp counter: a few nanoseconds, where a clock_gettime costs about 20.
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(steady_ns());
#endif
}

bool MemoryHistory::name_recent_alloc(std::uintptr_t address, HistoryTag op, std::size_t window) {
  const std::size_t kept = recorded_ < events_.size() ? recorded_ : events_.size();
  std::size_t i = next_;
  for (std::size_t n = 0; n < window && n < kept; ++n) {
    i = i == 0 ? events_.size() - 1 : i - 1;
    HistoryEvent& e = events_[i];
    if (e.action == HistoryAction::kAlloc && e.address == address) {
      if (e.op != 0) return false;
      e.op = op;
      return true;
    }
  }
  return false;
}

std::vector<HistoryEvent> MemoryHistory::events() const {
  const std::size_t kept = recorded_ < events_.size() ? recorded_ : events_.size();
  std::vector<HistoryEvent> out;
  out.reserve(kept);
  const std::size_t first = recorded_ < events_.size() ? 0 : next_;
#if defined(__x86_64__)
  // Ticks to nanoseconds, calibrated over all the time recorded so far (the longer, the
  // more exact).
  const std::uint64_t now = now_ticks();
  const std::int64_t elapsed_ns = steady_ns() - start_ns_;
  const double ns_per_tick = now > start_ticks_ && elapsed_ns > 0
                                 ? static_cast<double>(elapsed_ns) / static_cast<double>(now - start_ticks_)
                                 : 0.0;
#else
  const double ns_per_tick = 1.0;
#endif
  for (std::size_t i = 0; i < kept; ++i) {
    HistoryEvent e = events_[(first + i) % events_.size()];
    const auto ticks = static_cast<double>(static_cast<std::int64_t>(e.time - start_ticks_));
    e.time = static_cast<std::uint64_t>(std::max(0.0, ticks * ns_per_tick));
    out.push_back(e);
  }
  return out;
}

}  // namespace frugal::alloc
