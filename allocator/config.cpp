// Parsing of FRUGAL_ALLOC_CONF. The grammar follows PyTorch's allocator configuration:
//   max_split_size_mb:N  roundup_power2_divisions:N | [SIZE_MB:N,...,>:N]
//   garbage_collection_threshold:F  expandable_segments:True|False  max_non_split_rounding_mb:N
#include "allocator/config.h"

#include <bit>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "common/error.h"

namespace frugal::alloc {

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr const char* kKnownKeys =
    "max_split_size_mb, roundup_power2_divisions, garbage_collection_threshold, "
    "expandable_segments, max_non_split_rounding_mb";

[[noreturn]] void fail(const std::string& message) {
  throw ConfigError("FRUGAL_ALLOC_CONF: " + message);
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::size_t parse_count(const std::string& key, const std::string& value) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos ||
      value.size() > 12) {
    fail(key + " expects a non-negative whole number, got '" + value + "'");
  }
  return std::stoull(value);
}

std::size_t parse_divisions(const std::string& key, const std::string& value) {
  const std::size_t divisions = parse_count(key, value);
  if (divisions != 0 && !std::has_single_bit(divisions)) {
    fail(key + " divisions must be a power of two, got '" + value + "'");
  }
  return divisions;
}

// Splits "a:1,b:[x:1,y:2],c:3" at top-level commas.
std::vector<std::string> split_top_level(std::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0) fail("unbalanced brackets in '" + std::string(text) + "'");
  parts.push_back(current);
  return parts;
}

void parse_roundup(AllocatorConfig& config, const std::string& value) {
  const std::string key = "roundup_power2_divisions";
  if (value.empty() || value.front() != '[') {
    config.roundup_power2_divisions.fill(parse_divisions(key, value));
    return;
  }
  if (value.back() != ']') fail(key + " list must end with ']', got '" + value + "'");
  // "[256:1,512:2,>:4]": sizes below 256 MiB use 1 division, 256-512 MiB use 2, above use 4.
  int next_interval = 0;
  bool saw_rest = false;
  for (const std::string& raw : split_top_level(value.substr(1, value.size() - 2))) {
    const std::string entry = trim(raw);
    const std::size_t colon = entry.find(':');
    if (colon == std::string::npos) fail(key + " entry '" + entry + "' must be SIZE_MB:N");
    const std::string bound = trim(entry.substr(0, colon));
    const std::size_t divisions = parse_divisions(key, trim(entry.substr(colon + 1)));
    if (saw_rest) fail(key + " entry '" + entry + "' follows the '>' entry");
    int end_interval = AllocatorConfig::kRoundupIntervals;
    if (bound == ">") {
      saw_rest = true;
    } else {
      const std::size_t mb = parse_count(key, bound);
      if (!std::has_single_bit(mb)) fail(key + " size '" + bound + "' must be a power of two");
      end_interval = std::bit_width(mb) - 1;  // intervals start at 1 MiB = 2^0 MiB
      if (end_interval > AllocatorConfig::kRoundupIntervals) {
        end_interval = AllocatorConfig::kRoundupIntervals;
      }
      if (end_interval < next_interval) fail(key + " sizes must be in increasing order");
    }
    for (int i = next_interval; i < end_interval; ++i) {
      config.roundup_power2_divisions[i] = divisions;
    }
    next_interval = end_interval;
  }
}

}  // namespace

AllocatorConfig AllocatorConfig::parse(std::string_view text) {
  AllocatorConfig config;
  if (trim(text).empty()) return config;
  for (const std::string& raw : split_top_level(text)) {
    const std::string item = trim(raw);
    if (item.empty()) continue;
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) fail("'" + item + "' must be key:value");
    const std::string key = trim(item.substr(0, colon));
    const std::string value = trim(item.substr(colon + 1));
    if (key == "max_split_size_mb") {
      const std::size_t mb = parse_count(key, value);
      if (mb <= 20) fail(key + " must be greater than 20 (MiB), got " + value);
      config.max_split_size = mb * kMiB;
    } else if (key == "max_non_split_rounding_mb") {
      config.max_non_split_rounding = parse_count(key, value) * kMiB;
    } else if (key == "roundup_power2_divisions") {
      parse_roundup(config, value);
    } else if (key == "garbage_collection_threshold") {
      char* end = nullptr;
      const double threshold = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(threshold > 0.0 && threshold < 1.0)) {
        fail(key + " must be a number strictly between 0 and 1, got '" + value + "'");
      }
      config.garbage_collection_threshold = threshold;
    } else if (key == "expandable_segments") {
      if (value == "True" || value == "true" || value == "1") {
        config.expandable_segments = true;
      } else if (value == "False" || value == "false" || value == "0") {
        config.expandable_segments = false;
      } else {
        fail(key + " must be True or False, got '" + value + "'");
      }
    } else {
      fail("unknown key '" + key + "' (known keys: " + kKnownKeys + ")");
    }
  }
  return config;
}

AllocatorConfig AllocatorConfig::from_environment() {
  const char* text = std::getenv("FRUGAL_ALLOC_CONF");
  return text == nullptr ? AllocatorConfig{} : parse(text);
}

std::string AllocatorConfig::to_string() const {
  std::ostringstream out;
  out << "expandable_segments:" << (expandable_segments ? "True" : "False");
  if (max_split_size != std::numeric_limits<std::size_t>::max()) {
    out << ",max_split_size_mb:" << max_split_size / kMiB;
  }
  if (max_non_split_rounding != (std::size_t{20} << 20)) {
    out << ",max_non_split_rounding_mb:" << max_non_split_rounding / kMiB;
  }
  if (garbage_collection_threshold > 0) {
    out << ",garbage_collection_threshold:" << garbage_collection_threshold;
  }
  bool any_roundup = false;
  for (std::size_t d : roundup_power2_divisions) any_roundup |= d > 1;
  if (any_roundup) {
    out << ",roundup_power2_divisions:[";
    for (int i = 0; i < kRoundupIntervals; ++i) {
      out << (i ? "," : "")
          << (i + 1 < kRoundupIntervals ? std::to_string(std::size_t{2} << i) : ">") << ":"
          << roundup_power2_divisions[i];
    }
    out << "]";
  }
  return out.str();
}

std::size_t AllocatorConfig::roundup_divisions_for(std::size_t size) const {
  // Interval i covers [2^i MiB, 2^(i+1) MiB); sizes below 1 MiB use interval 0.
  int index = static_cast<int>(std::bit_width(size)) - 1 - 20;
  if (index < 0) index = 0;
  if (index >= kRoundupIntervals) index = kRoundupIntervals - 1;
  return roundup_power2_divisions[index];
}

}  // namespace frugal::alloc
