// Image file writers for the tests (stb_image_write's implementation lives here).
#include "image_files.h"

#include <zlib.h>

#include <stdexcept>

#include "temp_dir.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb/stb_image_write.h>

namespace frugal::test {

namespace {

void append(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<std::uint8_t>*>(context);
  out->insert(out->end(), static_cast<std::uint8_t*>(data),
              static_cast<std::uint8_t*>(data) + size);
}

void put_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}

void chunk(std::vector<std::uint8_t>& out, const char* type,
           const std::vector<std::uint8_t>& data) {
  put_be32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put_be32(out, static_cast<std::uint32_t>(
                    crc32(0, out.data() + start, static_cast<uInt>(out.size() - start))));
}

std::vector<std::uint8_t> png_header(int height, int width, std::uint8_t bit_depth,
                                     std::uint8_t color_type) {
  std::vector<std::uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<std::uint8_t> ihdr;
  put_be32(ihdr, static_cast<std::uint32_t>(width));
  put_be32(ihdr, static_cast<std::uint32_t>(height));
  ihdr.insert(ihdr.end(), {bit_depth, color_type, 0, 0, 0});
  chunk(out, "IHDR", ihdr);
  return out;
}

std::vector<std::uint8_t> zlib_compress(const std::vector<std::uint8_t>& raw) {
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<std::uint8_t> z(size);
  if (compress(z.data(), &size, raw.data(), static_cast<uLong>(raw.size())) != Z_OK)
    throw std::runtime_error("zlib compress failed");
  z.resize(size);
  return z;
}

}  // namespace

std::vector<std::uint8_t> pattern_image(int height, int width, int channels) {
  std::vector<std::uint8_t> p(static_cast<std::size_t>(height * width * channels));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        p[static_cast<std::size_t>((y * width + x) * channels + c)] = pattern(y, x, c);
  return p;
}

void write_png(const std::string& path, int height, int width, int channels,
               const std::uint8_t* pixels) {
  std::vector<std::uint8_t> out;
  if (!stbi_write_png_to_func(append, &out, width, height, channels, pixels, width * channels))
    throw std::runtime_error("stbi_write_png failed");
  write_bytes(path, out);
}

void write_jpeg(const std::string& path, int height, int width, int channels,
                const std::uint8_t* pixels, int quality) {
  std::vector<std::uint8_t> out;
  if (!stbi_write_jpg_to_func(append, &out, width, height, channels, pixels, quality))
    throw std::runtime_error("stbi_write_jpg failed");
  write_bytes(path, out);
}

void write_png16(const std::string& path, int height, int width, int channels,
                 const std::uint16_t* pixels) {
  const std::uint8_t color_type = channels == 1 ? 0 : channels == 3 ? 2 : channels == 4 ? 6 : 4;
  std::vector<std::uint8_t> out = png_header(height, width, 16, color_type);
  std::vector<std::uint8_t> raw;  // filter byte 0 then big-endian samples, per row
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    for (int i = 0; i < width * channels; ++i) {
      const std::uint16_t v = pixels[y * width * channels + i];
      raw.push_back(static_cast<std::uint8_t>(v >> 8));
      raw.push_back(static_cast<std::uint8_t>(v));
    }
  }
  chunk(out, "IDAT", zlib_compress(raw));
  chunk(out, "IEND", {});
  write_bytes(path, out);
}

void write_png_palette(const std::string& path, int height, int width,
                       const std::vector<std::uint8_t>& palette,
                       const std::vector<std::uint8_t>& indices) {
  std::vector<std::uint8_t> out = png_header(height, width, 8, 3);
  chunk(out, "PLTE", palette);
  std::vector<std::uint8_t> raw;
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), indices.begin() + y * width, indices.begin() + (y + 1) * width);
  }
  chunk(out, "IDAT", zlib_compress(raw));
  chunk(out, "IEND", {});
  write_bytes(path, out);
}

void write_png_bomb(const std::string& path, int height, int width) {
  std::vector<std::uint8_t> out = png_header(height, width, 8, 0);
  z_stream zs{};
  if (deflateInit(&zs, 9) != Z_OK) throw std::runtime_error("deflateInit failed");
  const std::vector<std::uint8_t> row(static_cast<std::size_t>(width) + 1, 0);  // filter 0, zeros
  std::vector<std::uint8_t> z, buffer(1 << 16);
  for (int y = 0; y <= height; ++y) {
    zs.next_in = const_cast<Bytef*>(row.data());
    zs.avail_in = y < height ? static_cast<uInt>(row.size()) : 0;
    const int flush = y < height ? Z_NO_FLUSH : Z_FINISH;
    do {
      zs.next_out = buffer.data();
      zs.avail_out = static_cast<uInt>(buffer.size());
      deflate(&zs, flush);
      z.insert(z.end(), buffer.data(), buffer.data() + (buffer.size() - zs.avail_out));
    } while (zs.avail_out == 0);
  }
  deflateEnd(&zs);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", {});
  write_bytes(path, out);
}

std::vector<std::uint8_t> png_bytes(int height, int width, int channels) {
  const auto pixels = pattern_image(height, width, channels);
  std::vector<std::uint8_t> out;
  stbi_write_png_to_func(append, &out, width, height, channels, pixels.data(), width * channels);
  return out;
}

std::vector<std::uint8_t> jpeg_bytes(int height, int width, int channels) {
  const auto pixels = pattern_image(height, width, channels);
  std::vector<std::uint8_t> out;
  stbi_write_jpg_to_func(append, &out, width, height, channels, pixels.data(), 95);
  return out;
}

}  // namespace frugal::test
