// Events for backends without real asynchronous streams (host memory, the simulated
// device). By default an event completes when recorded, as CPU work is synchronous; in
// manual mode events stay pending until a test completes them, which lets tests drive
// stream-deferred reuse step by step.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "allocator/backend.h"

namespace frugal::alloc {

class ManualEvents {
 public:
  // false: events complete at once (the default); true: they wait for complete_*().
  void set_manual(bool manual);
  bool manual() const;

  EventHandle record(StreamId stream);
  bool completed(EventHandle event) const;
  void destroy(EventHandle event);

  // Completes every pending event recorded on `stream` / on any stream.
  void complete_stream(StreamId stream);
  void complete_all();
  std::size_t pending() const;

 private:
  struct Event {
    StreamId stream;
    bool done;
  };
  mutable std::mutex mutex_;
  bool manual_ = false;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Event> events_;
};

// A backend whose events are ManualEvents: host memory and the simulated device, whose work is
// synchronous, so an event completes when recorded unless a test holds it back.
class ManualEventsBackend : public Backend {
 public:
  EventHandle record_event(StreamId stream) override { return events_.record(stream); }
  bool event_completed(EventHandle e) override { return events_.completed(e); }
  bool wait_event(EventHandle e) override { return events_.completed(e); }
  void destroy_event(EventHandle e) override { events_.destroy(e); }
  // Tests drive stream completion through this.
  ManualEvents& events() { return events_; }

 private:
  ManualEvents events_;
};

}  // namespace frugal::alloc
