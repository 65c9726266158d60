// Allocation traces in the text format "frugal-alloc-trace v1": a recorder that writes
// what an allocator was asked, as it happens, and a reader that parses a trace back with
// errors that name the line. Replaying a trace compares allocator policies on the same work.
//
//   # frugal-alloc-trace v1
//   a ID BYTES [STREAM]    allocate BYTES, known as ID from then on
//   f ID                   free the block allocated as ID
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "allocator/caching_allocator.h"

namespace frugal::alloc {

inline constexpr const char* kTraceHeader = "# frugal-alloc-trace v1";

struct TraceEvent {
  enum class Kind : std::uint8_t { kAllocate, kFree } kind;
  std::uint64_t id = 0;     // as written in the trace (any 64-bit number)
  std::uint64_t slot = 0;   // the allocation's number in the trace: 0, 1, 2 ... in order
  std::uint64_t bytes = 0;  // kAllocate only
  StreamId stream = 0;      // kAllocate only
};

struct Trace {
  std::vector<TraceEvent> events;
  // Allocations in the trace: every slot is below this, for dense per-allocation tables. (Not
  // the largest id: a trace of two lines may name id 2^64-1.)
  std::uint64_t slots = 0;
};

// A malformed trace: the message names the source and line, e.g. "trace.txt:17: ...".
class TraceError : public Error {
 public:
  explicit TraceError(const std::string& what) : Error(what) {}
};

// Parses a whole trace; `source` names it in error messages. Checks that ids are unique,
// that every free names a live id, and that sizes are positive.
Trace parse_trace(std::istream& in, const std::string& source);
Trace load_trace(const std::string& path);

// Writes each allocation and free of the allocator it observes as a v1 trace line.
class TraceRecorder : public AllocationObserver {
 public:
  explicit TraceRecorder(std::ostream& out, const std::string& comment = "");
  void on_allocate(std::uint64_t id, std::size_t bytes, StreamId stream) override;
  void on_free(std::uint64_t id) override;

 private:
  std::ostream& out_;
};

}  // namespace frugal::alloc
