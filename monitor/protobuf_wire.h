// The few pieces of Protocol Buffers' wire format that TensorBoard's Event and Summary
// messages need, encoded by hand so that writing event files depends on nothing: varints,
// 32- and 64-bit fixed fields, and length-delimited fields (strings, nested messages).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace frugal::monitor {

// Appends fields to a message, in the order written. Field numbers and types come from the
// .proto files (see event_file.h); zero values are written only when asked, as proto3 omits them.
class ProtoWriter {
 public:
  enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

  void varint_field(int field, std::uint64_t value) {
    tag(field, kVarint);
    varint(value);
  }
  // int64: negative values are their two's complement as a 10-byte varint, as protobuf does.
  void int64_field(int field, std::int64_t value) {
    varint_field(field, static_cast<std::uint64_t>(value));
  }
  void double_field(int field, double value) {
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    tag(field, kFixed64);
    fixed(bits, 8);
  }
  void float_field(int field, float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    tag(field, kFixed32);
    fixed(bits, 4);
  }
  // A string, bytes, or an already encoded nested message.
  void bytes_field(int field, std::string_view bytes) {
    tag(field, kLengthDelimited);
    varint(bytes.size());
    out_.append(bytes);
  }

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void tag(int field, WireType type) { varint((static_cast<std::uint64_t>(field) << 3) | type); }
  void varint(std::uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>((value & 0x7F) | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }
  // Little-endian, whatever the host's byte order.
  void fixed(std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }

  std::string out_;
};

}  // namespace frugal::monitor
