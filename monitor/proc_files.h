// Reading Linux /proc and /sys text files, which report a size of 0 and must be read until
// the end, and picking "Key:   123 kB" lines out of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace frugal::monitor {

// The whole file, or nullopt when it cannot be opened (a kernel without it, a container).
std::optional<std::string> read_text_file(const std::string& path);

// The value of the line "key: N kB" (in bytes) or "key: N" (as is), or nullopt.
std::optional<std::int64_t> find_kb_field(std::string_view text, std::string_view key);

}  // namespace frugal::monitor
