// The tests' event-file reader: TFRecord frames, then Event / Summary / Summary.Value
// messages decoded field by field, refusing anything the writer should never produce.
#include "event_reader.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace frugal::test {

namespace {

std::uint64_t read_le(const std::string& bytes, std::size_t at, int size) {
  std::uint64_t value = 0;
  for (int i = 0; i < size; ++i)
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return value;
}

std::uint32_t masked(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// A protobuf message as a sequence of (field, wire type, payload) entries.
struct Field {
  int number;
  int wire_type;
  std::uint64_t scalar;  // varint, fixed64 or fixed32 bits
  std::string bytes;     // length-delimited payload
};

std::uint64_t read_varint(const std::string& m, std::size_t& at) {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= m.size()) throw std::runtime_error("protobuf: varint runs past the end");
    const auto byte = static_cast<unsigned char>(m[at++]);
    value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return value;
  }
  throw std::runtime_error("protobuf: varint longer than 10 bytes");
}

std::vector<Field> decode(const std::string& m) {
  std::vector<Field> fields;
  std::size_t at = 0;
  while (at < m.size()) {
    const std::uint64_t key = read_varint(m, at);
    Field f{static_cast<int>(key >> 3), static_cast<int>(key & 7), 0, {}};
    switch (f.wire_type) {
      case 0:
        f.scalar = read_varint(m, at);
        break;
      case 1:
        if (at + 8 > m.size()) throw std::runtime_error("protobuf: fixed64 past the end");
        f.scalar = read_le(m, at, 8);
        at += 8;
        break;
      case 5:
        if (at + 4 > m.size()) throw std::runtime_error("protobuf: fixed32 past the end");
        f.scalar = read_le(m, at, 4);
        at += 4;
        break;
      case 2: {
        const std::uint64_t length = read_varint(m, at);
        if (length > m.size() - at)
          throw std::runtime_error("protobuf: length-delimited field past the end");
        f.bytes = m.substr(at, length);
        at += length;
        break;
      }
      default:
        throw std::runtime_error("protobuf: unexpected wire type " + std::to_string(f.wire_type));
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

void expect_wire(const Field& f, int wire_type, const char* what) {
  if (f.wire_type != wire_type)
    throw std::runtime_error(std::string(what) + ": wire type " + std::to_string(f.wire_type) +
                             ", expected " + std::to_string(wire_type));
}

ScalarValue decode_value(const std::string& m) {
  ScalarValue v;
  for (const Field& f : decode(m)) {
    if (f.number == 1) {
      expect_wire(f, 2, "Summary.Value.tag");
      v.tag = f.bytes;
    } else if (f.number == 2) {
      expect_wire(f, 5, "Summary.Value.simple_value");
      const auto bits = static_cast<std::uint32_t>(f.scalar);
      std::memcpy(&v.simple_value, &bits, 4);
      v.has_simple_value = true;
    } else {
      throw std::runtime_error("Summary.Value: unexpected field " + std::to_string(f.number));
    }
  }
  return v;
}

Event decode_event(const std::string& m) {
  Event e;
  for (const Field& f : decode(m)) {
    switch (f.number) {
      case 1: {
        expect_wire(f, 1, "Event.wall_time");
        std::memcpy(&e.wall_time, &f.scalar, 8);
        break;
      }
      case 2:
        expect_wire(f, 0, "Event.step");
        e.step = static_cast<std::int64_t>(f.scalar);
        break;
      case 3:
        expect_wire(f, 2, "Event.file_version");
        e.file_version = f.bytes;
        e.has_file_version = true;
        break;
      case 5:
        expect_wire(f, 2, "Event.summary");
        e.has_summary = true;
        for (const Field& s : decode(f.bytes)) {
          if (s.number != 1)
            throw std::runtime_error("Summary: unexpected field " + std::to_string(s.number));
          expect_wire(s, 2, "Summary.value");
          e.values.push_back(decode_value(s.bytes));
        }
        break;
      default:
        throw std::runtime_error("Event: unexpected field " + std::to_string(f.number));
    }
  }
  return e;
}

}  // namespace

std::uint32_t reference_crc32c(const std::string& data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char c : data) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

std::vector<Event> parse_event_records(const std::string& bytes) {
  std::vector<Event> events;
  std::size_t at = 0;
  while (at < bytes.size()) {
    const std::string where = "record at offset " + std::to_string(at);
    if (bytes.size() - at < 12) throw std::runtime_error(where + ": truncated header");
    const std::uint64_t length = read_le(bytes, at, 8);
    if (masked(reference_crc32c(bytes.substr(at, 8))) != read_le(bytes, at + 8, 4))
      throw std::runtime_error(where + ": length CRC mismatch");
    if (length > bytes.size() - at - 12 || bytes.size() - at - 12 - length < 4)
      throw std::runtime_error(where + ": truncated data");
    const std::string data = bytes.substr(at + 12, length);
    if (masked(reference_crc32c(data)) != read_le(bytes, at + 12 + length, 4))
      throw std::runtime_error(where + ": data CRC mismatch");
    events.push_back(decode_event(data));
    at += 12 + length + 4;
  }
  return events;
}

std::vector<Event> read_event_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return parse_event_records(
      std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

}  // namespace frugal::test
