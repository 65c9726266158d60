// The caching allocator's tunables, read from FRUGAL_ALLOC_CONF with the keys and syntax of
// PyTorch's PYTORCH_ALLOC_CONF ("key:value,key:value"), so the same settings mean the same
// thing. Malformed values and unknown keys are errors that name the key.
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace frugal::alloc {

struct AllocatorConfig {
  // Intervals of roundup_power2_divisions: [1 MiB, 2 MiB), ... [32 GiB, 64 GiB), as PyTorch.
  static constexpr int kRoundupIntervals = 16;

  // Blocks larger than this are never split (limits fragmentation from huge blocks).
  std::size_t max_split_size = std::numeric_limits<std::size_t>::max();
  // An unsplittable block may serve a request this much smaller than itself.
  std::size_t max_non_split_rounding = std::size_t{20} << 20;
  // Per interval: round sizes up to one of N equal divisions of the power-of-two range
  // (0 or 1 = plain 512-byte rounding).
  std::array<std::size_t, kRoundupIntervals> roundup_power2_divisions{};
  // When reserved memory passes this fraction of the limit, cached blocks that have not
  // been reused for longest are released before asking the device for more (0 = off).
  double garbage_collection_threshold = 0.0;
  // One growing virtual range per pool and stream instead of separate segments. frugal's
  // default is on where the backend supports virtual memory (see docs/allocator.md).
  bool expandable_segments = true;

  // Parses "key:value,..." — throws frugal::ConfigError naming the offending key or value.
  static AllocatorConfig parse(std::string_view text);
  // The FRUGAL_ALLOC_CONF environment variable, or the defaults when unset.
  static AllocatorConfig from_environment();
  // Back to the text form (for reports).
  std::string to_string() const;

  std::size_t roundup_divisions_for(std::size_t size) const;
};

}  // namespace frugal::alloc
