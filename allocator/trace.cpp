// Reading and writing frugal-alloc-trace v1 files.
#include "allocator/trace.h"

#include <charconv>
#include <fstream>
#include <istream>
#include <ostream>
#include <unordered_map>
#include <unordered_set>

namespace frugal::alloc {

namespace {

[[noreturn]] void fail(const std::string& source, std::size_t line, const std::string& what) {
  throw TraceError(source + ":" + std::to_string(line) + ": " + what);
}

// Splits on spaces and tabs.
std::vector<std::string_view> fields(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t' && text[i] != '\r') ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

std::uint64_t number(std::string_view text, const char* what, const std::string& source,
                     std::size_t line) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    fail(source, line, std::string(what) + " '" + std::string(text) + "' is not a whole number");
  }
  return value;
}

}  // namespace

Trace parse_trace(std::istream& in, const std::string& source) {
  Trace trace;
  std::unordered_map<std::uint64_t, std::uint64_t> live;  // id -> slot
  std::unordered_set<std::uint64_t> seen;
  std::string text;
  std::size_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (line == 1 && text.rfind("# frugal-alloc-trace", 0) == 0 &&
        text.rfind(kTraceHeader, 0) != 0) {
      fail(source, line,
           "unsupported trace version '" + text + "' (expected '" + kTraceHeader + "')");
    }
    const auto f = fields(text);
    if (f.empty() || f[0][0] == '#') continue;
    TraceEvent event{};
    if (f[0] == "a") {
      if (f.size() != 3 && f.size() != 4) fail(source, line, "expected 'a ID BYTES [STREAM]'");
      event.kind = TraceEvent::Kind::kAllocate;
      event.id = number(f[1], "id", source, line);
      event.bytes = number(f[2], "byte count", source, line);
      if (f.size() == 4) event.stream = number(f[3], "stream", source, line);
      if (event.bytes == 0) fail(source, line, "allocation of 0 bytes");
      if (!seen.insert(event.id).second) {
        fail(source, line, "id " + std::to_string(event.id) + " was allocated before");
      }
      event.slot = trace.slots++;
      live.emplace(event.id, event.slot);
    } else if (f[0] == "f") {
      if (f.size() != 2) fail(source, line, "expected 'f ID'");
      event.kind = TraceEvent::Kind::kFree;
      event.id = number(f[1], "id", source, line);
      const auto it = live.find(event.id);
      if (it == live.end()) {
        fail(source, line, "free of id " + std::to_string(event.id) + ", which is not live");
      }
      event.slot = it->second;
      live.erase(it);
    } else {
      fail(source, line, "unknown event '" + std::string(f[0]) + "' (expected 'a' or 'f')");
    }
    trace.events.push_back(event);
  }
  if (in.bad()) throw TraceError(source + ": read error");
  return trace;
}

Trace load_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TraceError(path + ": cannot open the trace file");
  return parse_trace(in, path);
}

TraceRecorder::TraceRecorder(std::ostream& out, const std::string& comment) : out_(out) {
  out_ << kTraceHeader << "\n";
  if (!comment.empty()) out_ << "# " << comment << "\n";
}

void TraceRecorder::on_allocate(std::uint64_t id, std::size_t bytes, StreamId stream) {
  out_ << "a " << id << ' ' << bytes;
  if (stream != 0) out_ << ' ' << stream;
  out_ << '\n';
}

void TraceRecorder::on_free(std::uint64_t id) { out_ << "f " << id << '\n'; }

}  // namespace frugal::alloc
