// The JSON snapshot of an allocator (segments, blocks, history events) and the files the
// memory report writes.
#include "allocator/memory_report.h"

#include <fstream>

#include "common/error.h"
#include "common/json_writer.h"

namespace frugal::alloc {

namespace {

// Appends `"key": value` pairs to a JSON object under construction.
class ObjectText {
 public:
  explicit ObjectText(std::string& out) : out_(out) { out_ += '{'; }
  ~ObjectText() { out_ += '}'; }
  ObjectText(const ObjectText&) = delete;
  ObjectText& operator=(const ObjectText&) = delete;

  void integer(const char* key, std::uint64_t value) { name(key) += std::to_string(value); }
  void integer(const char* key, std::int64_t value) { name(key) += std::to_string(value); }
  void text(const char* key, const std::string& value) { name(key) += JsonWriter::quote(value); }
  std::string& name(const char* key) {
    if (!first_) out_ += ", ";
    first_ = false;
    out_ += '"';
    out_ += key;
    out_ += "\": ";
    return out_;
  }

 private:
  std::string& out_;
  bool first_ = true;
};

const char* block_state(const SegmentInfo::BlockInfo& b) {
  if (b.allocated) return "active_allocated";
  if (b.pending) return "active_pending_free";
  return b.mapped ? "inactive" : "unmapped";
}

void write_text(const std::string& path, const std::string& text, const char* what) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  FRUGAL_CHECK(file.good(), std::string(what) + ": cannot open " + path + " for writing");
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  file.close();
  FRUGAL_CHECK(file.good(), std::string(what) + ": writing " + path + " failed (disk full?)");
}

}  // namespace

std::string memory_snapshot_json(const CachingAllocator::Snapshot& snapshot) {
  const std::vector<std::string> tags = history_tag_names();
  auto tag = [&](HistoryTag t) { return t < tags.size() ? tags[t] : std::string(); };
  std::string out;
  out.reserve(4096 + snapshot.events.size() * 190);
  {
    ObjectText root(out);
    root.text("format", "frugal-memory-snapshot v1");
    root.text("device", snapshot.device);
    root.integer("allocated", std::uint64_t{snapshot.allocated});
    root.integer("reserved", std::uint64_t{snapshot.reserved});
    {
      ObjectText history(root.name("history"));
      history.integer("max_entries", std::uint64_t{snapshot.history_capacity});
      history.integer("recorded", snapshot.events_recorded);
      history.integer("kept", std::uint64_t{snapshot.events.size()});
    }
    root.name("segments") += '[';
    for (std::size_t i = 0; i < snapshot.segments.size(); ++i) {
      const SegmentInfo& seg = snapshot.segments[i];
      if (i > 0) out += ",\n ";
      std::uint64_t allocated = 0, requested = 0;
      for (const auto& b : seg.blocks) {
        if (b.allocated) allocated += b.size, requested += b.requested;
      }
      ObjectText s(out);
      s.integer("address", std::uint64_t{seg.address});
      s.integer("total_size", std::uint64_t{seg.size});
      s.integer("mapped_size", std::uint64_t{seg.mapped});
      s.integer("allocated_size", allocated);
      s.integer("requested_size", requested);
      s.integer("stream", std::uint64_t{seg.stream});
      s.text("segment_type", seg.pool == PoolKind::kSmall ? "small" : "large");
      s.integer("is_expandable", std::uint64_t{seg.expandable});
      s.name("blocks") += '[';
      for (std::size_t j = 0; j < seg.blocks.size(); ++j) {
        const auto& b = seg.blocks[j];
        if (j > 0) out += ", ";
        ObjectText block(out);
        block.integer("address", std::uint64_t{b.address});
        block.integer("size", std::uint64_t{b.size});
        block.integer("requested_size", std::uint64_t{b.requested});
        block.text("state", block_state(b));
        block.text("op", tag(b.op));
        block.text("module", tag(b.module));
      }
      out += ']';
    }
    out += "]";
    root.name("device_traces") += "[[";
    for (std::size_t i = 0; i < snapshot.events.size(); ++i) {
      const HistoryEvent& e = snapshot.events[i];
      out += i > 0 ? ",\n " : "\n ";
      ObjectText event(out);
      event.text("action", history_action_name(e.action));
      event.integer("addr", std::uint64_t{e.address});
      event.integer("size", e.size);
      event.integer("stream", std::uint64_t{e.stream});
      event.integer("time_ns", e.time);
      event.text("op", tag(e.op));
      event.text("module", tag(e.module));
      event.integer("allocated", e.allocated);
      event.integer("reserved", e.reserved);
    }
    out += "]]";
  }
  out += '\n';
  return out;
}

void write_memory_snapshot(const CachingAllocator& allocator, const std::string& path) {
  write_text(path, memory_snapshot_json(allocator.memory_snapshot()), "memory snapshot");
}

void write_memory_report(const CachingAllocator& allocator, const std::string& path) {
  const CachingAllocator::Snapshot snapshot = allocator.memory_snapshot();
  const std::string title = "frugal memory report (" + snapshot.device + ")";
  write_text(path, memory_report_html(memory_snapshot_json(snapshot), title), "memory report");
}

}  // namespace frugal::alloc
