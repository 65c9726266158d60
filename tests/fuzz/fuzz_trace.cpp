// libFuzzer target for the allocation-trace reader of frugal-alloc-replay: any text must give
// a TraceError naming its line, or a trace that replays on a simulated device of 1 GiB (the
// replay trusts what the reader checked: unique ids, frees of live ids, sizes above 0).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "allocator/trace.h"
#include "allocator/trace_replay.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const frugal::alloc::Trace trace = frugal::alloc::parse_trace(in, "fuzz.trace");
    frugal::alloc::replay_trace(trace, std::size_t{1} << 30, frugal::alloc::AllocatorConfig{});
  } catch (const frugal::Error&) {
  }
  return 0;
}
