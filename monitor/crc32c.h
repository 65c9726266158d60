// CRC32C (Castagnoli), the checksum of TFRecord framing, and TensorFlow's "masked" form of
// it: a CRC stored next to the data it covers is rotated and offset, so that a CRC of a
// string that itself contains CRCs does not degenerate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace frugal::monitor {

// CRC-32C of `size` bytes (polynomial 0x1EDC6F41, reflected; crc32c("123456789") = 0xE3069283).
std::uint32_t crc32c(const void* data, std::size_t size);
inline std::uint32_t crc32c(std::string_view bytes) { return crc32c(bytes.data(), bytes.size()); }

// TensorFlow's mask: rotate right by 15 bits and add a constant.
constexpr std::uint32_t mask_crc(std::uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
constexpr std::uint32_t unmask_crc(std::uint32_t masked) {
  const std::uint32_t rotated = masked - 0xa282ead8u;
  return (rotated >> 17) | (rotated << 15);
}

inline std::uint32_t masked_crc32c(const void* data, std::size_t size) {
  return mask_crc(crc32c(data, size));
}

}  // namespace frugal::monitor
