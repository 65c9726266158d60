// Images on their way from a file to a batch slot: the working buffer the transforms pass
// along (uint8 or float, HWC or CHW), and decoding PNG/JPEG bytes with stb_image after
// checking the container (PNG chunk CRCs, JPEG markers) so that damage is reported, not
// silently decoded into garbage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace frugal::data {

enum class ImageLayout : std::uint8_t { HWC, CHW };

// The geometry and element type of an image, without its pixels.
struct ImageShape {
  int height = 0, width = 0, channels = 0;
  bool is_float = false;  // uint8 in [0, 255] when false
  ImageLayout layout = ImageLayout::HWC;
  std::size_t element_bytes() const { return is_float ? sizeof(float) : 1; }
  std::size_t numel() const {
    return static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
           static_cast<std::size_t>(channels);
  }
  std::size_t nbytes() const { return numel() * element_bytes(); }
  bool operator==(const ImageShape&) const = default;
  std::string str() const;  // "28x28x1 uint8 HWC"
};

// An image: a shape and its pixels, which are either owned (`storage`) or borrowed (a decoded
// sample inside a memory-mapped shard: read in place, never copied).
struct Image {
  ImageShape shape;
  const void* pixels = nullptr;
  std::vector<unsigned char> storage;
  // When set, reset() hands out this buffer (a batch slot of the right size) instead of
  // `storage`, so that the last transform writes its result in place.
  void* target = nullptr;

  // Makes this image own a buffer for `s` (reusing its capacity: no allocation once warm).
  void* reset(const ImageShape& s) {
    shape = s;
    if (target) {
      pixels = target;
      return target;
    }
    storage.resize(s.nbytes());
    pixels = storage.data();
    return storage.data();
  }
  void borrow(const ImageShape& s, const void* p) {
    shape = s;
    pixels = p;
  }
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(pixels); }
};

enum class ImageFormat { Unknown, Png, Jpeg };
ImageFormat sniff_image_format(const unsigned char* bytes, std::size_t size);
const char* image_format_name(ImageFormat f);

// Images larger than this many pixels are refused before decoding (a hostile or damaged
// header must not make the decoder allocate gigabytes). The fuzzers build with a smaller
// limit so that each input runs in milliseconds.
#ifndef FRUGAL_MAX_IMAGE_PIXELS
#define FRUGAL_MAX_IMAGE_PIXELS (std::int64_t{1} << 26)
#endif
inline constexpr std::int64_t kMaxImagePixels = FRUGAL_MAX_IMAGE_PIXELS;

// Decodes PNG (8- or 16-bit; gray, gray+alpha, RGB, RGBA, palette) or JPEG (baseline or
// progressive) bytes into `out` as HWC with `channels` channels (1 gray, 2 gray+alpha,
// 3 RGB, 4 RGBA; 0 keeps the file's). 8-bit images become uint8; 16-bit PNGs become float
// in [0, 1] so that no precision is lost. Throws frugal::Error naming `name` and, for
// damaged containers, the byte offset of the damage.
void decode_image(const unsigned char* bytes, std::size_t size, int channels,
                  const std::string& name, Image& out);

// What a PNG/JPEG header declares, read without decoding pixels or checking the container:
// channels as stored (1 gray, 2 gray + alpha, 3 colour, 4 colour + alpha; a palette PNG
// counts as colour). Nothing when the header cannot be read.
struct ImageHeader {
  ImageFormat format = ImageFormat::Unknown;
  int height = 0, width = 0, channels = 0;
  bool sixteen_bit = false;
};
std::optional<ImageHeader> peek_image_header(const unsigned char* bytes, std::size_t size);

// Reads a whole file into `buffer` (reused between calls); errors name the file.
void read_file_into(const std::string& path, std::vector<unsigned char>& buffer);

}  // namespace frugal::data
