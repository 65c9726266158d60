// Exports of an allocator's memory: a JSON snapshot of its segments, blocks and history
// events (the shape of PyTorch's torch.cuda.memory._snapshot()), and one self-contained
// HTML page that draws the memory timeline and the segment map at a chosen moment.
#pragma once

#include <string>

#include "allocator/caching_allocator.h"

namespace frugal::alloc {

// The snapshot as JSON text. Only objects, arrays, strings and integers, so any JSON
// reader takes it. Layout:
//   {"format": "frugal-memory-snapshot v1", "device", "allocated", "reserved",
//    "history": {"max_entries", "recorded", "kept"},
//    "segments": [{"address", "total_size", "mapped_size", "allocated_size",
//                  "requested_size", "stream", "segment_type": "small"|"large",
//                  "is_expandable": 0|1,
//                  "blocks": [{"address", "size", "requested_size",
//                              "state": "active_allocated"|"active_pending_free"|
//                                       "inactive"|"unmapped", "op", "module"}]}],
//    "device_traces": [[{"action", "addr", "size", "stream", "time_ns", "op", "module",
//                        "allocated", "reserved"}]]}
// Actions are PyTorch's: alloc, free_requested, free_completed, segment_alloc,
// segment_free, segment_map, segment_unmap, oom.
std::string memory_snapshot_json(const CachingAllocator::Snapshot& snapshot);

// The HTML page for a snapshot's JSON: no network access, inline script and canvas.
std::string memory_report_html(const std::string& snapshot_json, const std::string& title);

// Writes the snapshot's JSON / the HTML report of `allocator` now. Throw frugal::Error
// naming the file when it cannot be written. frugal-train --memory-report PATH.html.
void write_memory_snapshot(const CachingAllocator& allocator, const std::string& path);
void write_memory_report(const CachingAllocator& allocator, const std::string& path);

}  // namespace frugal::alloc
