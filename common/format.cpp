// Byte-count formatting and parsing for reports, error messages and command-line flags.
#include "common/format.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace frugal {

std::string format_double_exact(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

std::string format_bytes(std::int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  const bool negative = bytes < 0;
  double value = std::fabs(static_cast<double>(bytes));
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char text[48];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%s%lld B", negative ? "-" : "",
                  static_cast<long long>(std::llabs(bytes)));
  } else {
    std::snprintf(text, sizeof text, "%s%.2f %s", negative ? "-" : "", value, kUnits[unit]);
  }
  return text;
}

std::int64_t parse_bytes(const std::string& text) {
  std::size_t pos = 0;
  double number = 0;
  try {
    number = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw ConfigError("'" + text + "' is not a byte count (expected e.g. 4096, 64MiB, 2GiB)");
  }
  std::string suffix;
  for (; pos < text.size(); ++pos) {
    if (!std::isspace(static_cast<unsigned char>(text[pos])))
      suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(text[pos])));
  }
  double scale = 0;
  if (suffix.empty() || suffix == "b")
    scale = 1;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib")
    scale = 1024.0;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib")
    scale = 1024.0 * 1024;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib")
    scale = 1024.0 * 1024 * 1024 * 1024;
  if (scale == 0 || number < 0 || !std::isfinite(number)) {
    throw ConfigError("'" + text + "' is not a byte count (expected e.g. 4096, 64MiB, 2GiB)");
  }
  return static_cast<std::int64_t>(std::llround(number * scale));
}

}  // namespace frugal
