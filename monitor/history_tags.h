// Live bytes by op and module from the allocator's memory history: every allocated block
// remembers the op and module that allocated it, so a snapshot adds them up per tag. This
// is what the leak watch's provider needs to name the op or module whose memory grows.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "monitor/leak_watch.h"

namespace frugal::alloc {
class CachingAllocator;
}

namespace frugal::monitor {

enum class TagGrouping {
  kModuleAndOp,  // "3 / clone": the module path and the op within it
  kModule,       // "features.3 (Conv2d)"
  kOp,           // "conv2d"
};

// Name of the blocks allocated before the history recorded (or outside any op and module).
inline constexpr const char* kUntagged = "(untagged)";

// Bytes of the allocator's allocated blocks now, per tag (block sizes, as allocated_bytes
// counts them). Everything is kUntagged while the history is off.
std::map<std::string, std::int64_t> live_bytes_by_tag(
    const alloc::CachingAllocator& allocator, TagGrouping grouping = TagGrouping::kModuleAndOp);

// A provider for LeakWatch over `allocator` (which must outlive it): live_bytes_by_tag
// while the allocator records its history, nothing otherwise (the watch then names no tag).
TagBytesProvider history_tag_provider(const alloc::CachingAllocator& allocator,
                                      TagGrouping grouping = TagGrouping::kModuleAndOp);

}  // namespace frugal::monitor
