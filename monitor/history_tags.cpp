// Adding up the allocator's live blocks by the op and module tags the history gave them.
#include "monitor/history_tags.h"

#include "allocator/caching_allocator.h"
#include "allocator/history.h"

namespace frugal::monitor {

namespace {

std::string tag_name(alloc::HistoryTag op, alloc::HistoryTag module, TagGrouping grouping) {
  const std::string op_name = op ? alloc::history_tag_name(op) : "";
  const std::string module_name = module ? alloc::history_tag_name(module) : "";
  std::string name;
  switch (grouping) {
    case TagGrouping::kOp:
      name = op_name;
      break;
    case TagGrouping::kModule:
      name = module_name;
      break;
    case TagGrouping::kModuleAndOp:
      name = module_name.empty() || op_name.empty() ? module_name + op_name
                                                    : module_name + " / " + op_name;
      break;
  }
  return name.empty() ? kUntagged : name;
}

}  // namespace

std::map<std::string, std::int64_t> live_bytes_by_tag(const alloc::CachingAllocator& allocator,
                                                      TagGrouping grouping) {
  // Tags repeat across blocks: name each (op, module) pair once.
  std::map<std::pair<alloc::HistoryTag, alloc::HistoryTag>, std::int64_t> by_pair;
  for (const alloc::SegmentInfo& segment : allocator.snapshot())
    for (const auto& block : segment.blocks)
      if (block.allocated)
        by_pair[{block.op, block.module}] += static_cast<std::int64_t>(block.size);
  std::map<std::string, std::int64_t> bytes;
  for (const auto& [tags, size] : by_pair)
    bytes[tag_name(tags.first, tags.second, grouping)] += size;
  return bytes;
}

TagBytesProvider history_tag_provider(const alloc::CachingAllocator& allocator,
                                      TagGrouping grouping) {
  return [&allocator, grouping]() -> std::map<std::string, std::int64_t> {
    if (!allocator.history_enabled()) return {};
    return live_bytes_by_tag(allocator, grouping);
  };
}

}  // namespace frugal::monitor
