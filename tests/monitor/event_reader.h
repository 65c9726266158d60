// A reader of TensorBoard event files for the tests, written apart from the writer: its own
// bit-by-bit CRC32C and its own protobuf decoding, so a mistake in the writer is not
// mirrored here. It checks both CRCs of every record and throws naming the offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frugal::test {

struct ScalarValue {
  std::string tag;
  float simple_value = 0;
  bool has_simple_value = false;
};

struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  bool has_file_version = false, has_summary = false;
  std::string file_version;
  std::vector<ScalarValue> values;
};

// The CRC32C of `data`, one bit at a time from the polynomial's definition.
std::uint32_t reference_crc32c(const std::string& data);

// Every record of the file decoded; std::runtime_error on a bad length, CRC or message.
std::vector<Event> read_event_file(const std::string& path);
std::vector<Event> parse_event_records(const std::string& bytes);

}  // namespace frugal::test
