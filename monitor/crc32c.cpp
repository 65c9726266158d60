// CRC32C with a byte-at-a-time table: event files are a few bytes per scalar, so the
// simple table is far below the cost of the write it protects.
#include "monitor/crc32c.h"

#include <array>

namespace frugal::monitor {

namespace {

constexpr std::uint32_t kReflectedPolynomial = 0x82F63B78u;  // 0x1EDC6F41 bit-reversed

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kReflectedPolynomial : 0u);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> kTable = make_table();

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) crc = (crc >> 8) ^ kTable[(crc ^ bytes[i]) & 0xFFu];
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace frugal::monitor
