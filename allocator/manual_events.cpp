// Implementation of the manually completed event table used by the host and simulated
// backends.
#include "allocator/manual_events.h"

#include "common/error.h"

namespace frugal::alloc {

void ManualEvents::set_manual(bool manual) {
  std::lock_guard<std::mutex> lock(mutex_);
  manual_ = manual;
}

bool ManualEvents::manual() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return manual_;
}

EventHandle ManualEvents::record(StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t id = next_id_++;
  events_.emplace(id, Event{stream, !manual_});
  return reinterpret_cast<EventHandle>(static_cast<std::uintptr_t>(id));
}

bool ManualEvents::completed(EventHandle event) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = events_.find(reinterpret_cast<std::uintptr_t>(event));
  FRUGAL_CHECK(it != events_.end(), "event_completed: unknown event");
  return it->second.done;
}

void ManualEvents::destroy(EventHandle event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.erase(reinterpret_cast<std::uintptr_t>(event));
}

void ManualEvents::complete_stream(StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, event] : events_) {
    if (event.stream == stream) event.done = true;
  }
}

void ManualEvents::complete_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, event] : events_) event.done = true;
}

std::size_t ManualEvents::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t n = 0;
  for (const auto& [id, event] : events_) n += event.done ? 0 : 1;
  return n;
}

}  // namespace frugal::alloc
