// Small text helpers shared by reports and error messages: human-readable byte counts
// ("1.50 MiB") and fixed-width columns, without <format> (g++ 12).
#pragma once

#include <cstdint>
#include <string>

namespace frugal {

// A double as the shortest-safe text that reads back (strtod) to the same bits: "%.17g".
// "nan" and "inf" stay as they are; JSON writers turn those into null themselves.
std::string format_double_exact(double value);

// "512 B", "1.50 KiB", "213.45 MiB", "2.00 GiB" — binary prefixes, two decimals.
std::string format_bytes(std::int64_t bytes);

// Parses "123", "64MiB", "2GiB", "1.5GB", "512k" into bytes (binary prefixes for both
// KiB and KB spellings, as memory sizes usually mean). Throws ConfigError on bad text.
std::int64_t parse_bytes(const std::string& text);

}  // namespace frugal
