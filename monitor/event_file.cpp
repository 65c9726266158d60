// Encoding of TensorBoard events and their TFRecord frames (see event_file.h).
#include "monitor/event_file.h"

#include "monitor/crc32c.h"
#include "monitor/protobuf_wire.h"

namespace frugal::monitor {

namespace {

void append_le(std::string& out, std::uint64_t value, int size) {
  for (int i = 0; i < size; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

}  // namespace

std::string encode_file_version_event(double wall_time, std::string_view version) {
  ProtoWriter event;
  event.double_field(event_field::kWallTime, wall_time);
  event.bytes_field(event_field::kFileVersion, version);
  return event.take();
}

std::string encode_scalar_event(double wall_time, std::int64_t step, std::string_view tag,
                                float value) {
  ProtoWriter summary_value;
  summary_value.bytes_field(value_field::kTag, tag);
  summary_value.float_field(value_field::kSimpleValue, value);
  ProtoWriter summary;
  summary.bytes_field(summary_field::kValue, summary_value.bytes());
  ProtoWriter event;
  event.double_field(event_field::kWallTime, wall_time);
  if (step != 0) event.int64_field(event_field::kStep, step);  // proto3 leaves out zeros
  event.bytes_field(event_field::kSummary, summary.bytes());
  return event.take();
}

std::string frame_record(std::string_view data) {
  std::string record;
  record.reserve(data.size() + 16);
  append_le(record, data.size(), 8);
  append_le(record, masked_crc32c(record.data(), 8), 4);
  record.append(data);
  append_le(record, masked_crc32c(data.data(), data.size()), 4);
  return record;
}

}  // namespace frugal::monitor
