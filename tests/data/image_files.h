// Helpers for the image tests: pixels of a known pattern, and PNG/JPEG files of them written
// with stb_image_write (8-bit PNG, baseline JPEG) or by hand with zlib (16-bit PNG, which
// stb_image_write cannot write).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frugal::test {

// Pixel (y, x, c) of the test pattern: distinct in every channel and position.
inline std::uint8_t pattern(int y, int x, int c) {
  return static_cast<std::uint8_t>(y * 20 + x * 3 + c * 50);
}
std::vector<std::uint8_t> pattern_image(int height, int width, int channels);

void write_png(const std::string& path, int height, int width, int channels,
               const std::uint8_t* pixels);
void write_jpeg(const std::string& path, int height, int width, int channels,
                const std::uint8_t* pixels, int quality = 95);
// A 16-bit PNG (gray or RGB) of big-endian-free values: pixels[i] is the sample value.
void write_png16(const std::string& path, int height, int width, int channels,
                 const std::uint16_t* pixels);
// An 8-bit palette PNG (colour type 3): `indices` height x width into `palette` (RGB
// triples, at most 256).
void write_png_palette(const std::string& path, int height, int width,
                       const std::vector<std::uint8_t>& palette,
                       const std::vector<std::uint8_t>& indices);
// A decompression bomb: a valid gray PNG of height x width zero pixels, a few hundred
// kilobytes on disk that would decode to height x width bytes.
void write_png_bomb(const std::string& path, int height, int width);
// The bytes of a PNG/JPEG of the pattern.
std::vector<std::uint8_t> png_bytes(int height, int width, int channels);
std::vector<std::uint8_t> jpeg_bytes(int height, int width, int channels);

}  // namespace frugal::test
