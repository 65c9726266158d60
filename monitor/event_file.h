// TensorBoard's event file format, written without TensorFlow or protobuf: Event messages
// (tensorflow/core/util/event.proto) holding scalar Summary values
// (tensorflow/core/framework/summary.proto), each framed as a TFRecord.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace frugal::monitor {

// What the first event of every file says, so readers know the format.
inline constexpr std::string_view kEventFileVersion = "brain.Event:2";

// Field numbers from the .proto files, named so a reader can check them against the source.
namespace event_field {
inline constexpr int kWallTime = 1;     // double, seconds since the Unix epoch
inline constexpr int kStep = 2;         // int64
inline constexpr int kFileVersion = 3;  // string (oneof what)
inline constexpr int kSummary = 5;      // Summary (oneof what)
}  // namespace event_field
namespace summary_field {
inline constexpr int kValue = 1;  // repeated Summary.Value
}
namespace value_field {
inline constexpr int kTag = 1;          // string
inline constexpr int kSimpleValue = 2;  // float (oneof value)
}  // namespace value_field

// The Event announcing the file version (step 0).
std::string encode_file_version_event(double wall_time,
                                      std::string_view version = kEventFileVersion);
// An Event with one scalar Summary.Value{tag, simple_value}.
std::string encode_scalar_event(double wall_time, std::int64_t step, std::string_view tag,
                                float value);

// One TFRecord: uint64 length, masked CRC32C of those 8 bytes, the data, masked CRC32C of
// the data (all little-endian).
std::string frame_record(std::string_view data);

}  // namespace frugal::monitor
