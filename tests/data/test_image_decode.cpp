// Decoding PNG (gray, gray+alpha, RGB, RGBA, 8- and 16-bit) and JPEG (baseline, progressive)
// into the channels asked for, and damaged files (truncated, corrupt, not an image) giving
// errors that name the file and the byte offset.
#include <catch2/catch.hpp>

#include <cmath>

#include "data/image.h"
#include "data/image_write.h"
#include "image_files.h"
#include "progressive_jpeg.h"
#include "temp_dir.h"

using namespace frugal;
using namespace frugal::data;
using namespace frugal::test;
using Catch::Matchers::Contains;

namespace {

Image decode_file(const std::string& path, int channels) {
  std::vector<unsigned char> bytes;
  read_file_into(path, bytes);
  Image image;
  decode_image(bytes.data(), bytes.size(), channels, path, image);
  return image;
}

int at(const Image& im, int y, int x, int c) {
  return im.bytes()[(y * im.shape.width + x) * im.shape.channels + c];
}

}  // namespace

TEST_CASE("image: 8-bit PNG of 1 to 4 channels decodes exactly, as stored and converted") {
  TempDir dir;
  for (int channels = 1; channels <= 4; ++channels) {
    std::string name = "p";  // built with += (GCC 12 warns falsely about "literal" + string)
    name += std::to_string(channels);
    const std::string path = dir.file(name + ".png");
    const auto pixels = pattern_image(5, 7, channels);
    test::write_png(path, 5, 7, channels, pixels.data());
    const Image im = decode_file(path, 0);
    CHECK(im.shape == ImageShape{5, 7, channels, false, ImageLayout::HWC});
    CHECK(std::vector<unsigned char>(im.bytes(), im.bytes() + im.shape.nbytes()) == pixels);
  }
  // Gray -> RGB repeats the value; RGB -> gray is the luma mix; RGB -> RGBA adds opaque alpha.
  const Image rgb_of_gray = decode_file(dir.file("p1.png"), 3);
  CHECK(rgb_of_gray.shape.channels == 3);
  CHECK(at(rgb_of_gray, 2, 3, 0) == pattern(2, 3, 0));
  CHECK(at(rgb_of_gray, 2, 3, 2) == pattern(2, 3, 0));
  const Image gray_of_rgb = decode_file(dir.file("p3.png"), 1);
  const int r = pattern(4, 6, 0), g = pattern(4, 6, 1), b = pattern(4, 6, 2);
  CHECK(std::abs(at(gray_of_rgb, 4, 6, 0) - (r * 77 + g * 150 + b * 29) / 256) <= 1);
  const Image rgba_of_rgb = decode_file(dir.file("p3.png"), 4);
  CHECK(at(rgba_of_rgb, 1, 1, 3) == 255);
  CHECK(at(rgba_of_rgb, 1, 1, 1) == pattern(1, 1, 1));
}

TEST_CASE("image: 16-bit PNG keeps its precision as float in [0, 1]") {
  TempDir dir;
  std::vector<std::uint16_t> values(4 * 3 * 3);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<std::uint16_t>(i * 1777 + 1);
  write_png16(dir.file("deep.png"), 4, 3, 3, values.data());
  const Image im = decode_file(dir.file("deep.png"), 0);
  REQUIRE(im.shape == ImageShape{4, 3, 3, true, ImageLayout::HWC});
  const float* f = static_cast<const float*>(im.pixels);
  for (std::size_t i = 0; i < values.size(); ++i)
    CHECK(f[i] == Approx(values[i] / 65535.0f).margin(1e-7));
  // 1 + 1777 and 1 differ by less than one 8-bit step: only the float path tells them apart.
  CHECK(f[1] != f[0]);
  const Image gray = decode_file(dir.file("deep.png"), 1);
  CHECK(gray.shape == ImageShape{4, 3, 1, true, ImageLayout::HWC});
}

TEST_CASE("image: baseline and progressive JPEG decode close to their source pixels") {
  TempDir dir;
  const auto pixels = pattern_image(16, 16, 3);
  write_jpeg(dir.file("base.jpg"), 16, 16, 3, pixels.data(), 100);
  const Image base = decode_file(dir.file("base.jpg"), 0);
  REQUIRE(base.shape == ImageShape{16, 16, 3, false, ImageLayout::HWC});
  int worst = 0;
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 3; ++c)
        worst = std::max(worst, std::abs(at(base, y, x, c) - pattern(y, x, c)));
  CHECK(worst <= 12);  // lossy, but close at quality 100

  write_bytes(dir.file("prog.jpg"),
              Bytes(std::begin(kProgressiveJpeg), std::end(kProgressiveJpeg)));
  const Image prog = decode_file(dir.file("prog.jpg"), 0);
  REQUIRE(prog.shape ==
          ImageShape{kProgressiveJpegHeight, kProgressiveJpegWidth, 3, false, ImageLayout::HWC});
  worst = 0;
  for (int y = 0; y < prog.shape.height; ++y)
    for (int x = 0; x < prog.shape.width; ++x) {
      worst = std::max(worst, std::abs(at(prog, y, x, 0) - 16 * x));
      worst = std::max(worst, std::abs(at(prog, y, x, 1) - 20 * y));
      worst = std::max(worst, std::abs(at(prog, y, x, 2) - 128));
    }
  CHECK(worst <= 12);
  const Image prog_gray = decode_file(dir.file("prog.jpg"), 1);
  CHECK(prog_gray.shape.channels == 1);
}

TEST_CASE("image: truncated and corrupt PNG files are errors naming the file and offset") {
  TempDir dir;
  const Bytes good = png_bytes(8, 8, 3);
  Bytes truncated(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  write_bytes(dir.file("cut.png"), truncated);
  CHECK_THROWS_WITH(decode_file(dir.file("cut.png"), 0), Contains(dir.file("cut.png")) &&
                                                             Contains("byte offset") &&
                                                             Contains("truncated"));
  Bytes corrupt = good;
  corrupt[41 + 6] ^= 0x5a;  // inside IDAT's data (IHDR ends at 33): only the CRC notices
  write_bytes(dir.file("bad.png"), corrupt);
  CHECK_THROWS_WITH(decode_file(dir.file("bad.png"), 0),
                    Contains(dir.file("bad.png")) && Contains("IDAT") && Contains("CRC"));
  Bytes no_iend(good.begin(), good.end() - 12);
  write_bytes(dir.file("noend.png"), no_iend);
  CHECK_THROWS_WITH(decode_file(dir.file("noend.png"), 0), Contains("IEND"));
  write_bytes(dir.file("text.png"), Bytes{'h', 'e', 'l', 'l', 'o'});
  CHECK_THROWS_WITH(decode_file(dir.file("text.png"), 0),
                    Contains(dir.file("text.png")) && Contains("not a PNG or JPEG"));
  write_bytes(dir.file("empty.png"), Bytes{});
  CHECK_THROWS_WITH(decode_file(dir.file("empty.png"), 0), Contains("0 bytes"));
  CHECK_THROWS_WITH(decode_file(dir.file("missing.png"), 0),
                    Contains(dir.file("missing.png")) && Contains("cannot open"));
}

TEST_CASE("image: truncated and corrupt JPEG files are errors naming the file") {
  TempDir dir;
  const Bytes good = jpeg_bytes(16, 16, 3);
  for (std::size_t cut : {good.size() - 1, good.size() / 2, std::size_t{40}, std::size_t{4}}) {
    write_bytes(dir.file("cut.jpg"),
                Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)));
    CHECK_THROWS_WITH(decode_file(dir.file("cut.jpg"), 0),
                      Contains(dir.file("cut.jpg")) && Contains("truncated"));
  }
  const Bytes prog(std::begin(kProgressiveJpeg), std::end(kProgressiveJpeg));
  write_bytes(dir.file("cut-prog.jpg"),
              Bytes(prog.begin(), prog.begin() + static_cast<std::ptrdiff_t>(prog.size() * 2 / 3)));
  CHECK_THROWS_WITH(decode_file(dir.file("cut-prog.jpg"), 0), Contains("truncated"));
  // A frame header claiming 0 lines is refused by the decoder itself.
  Bytes corrupt = good;
  for (std::size_t i = 0; i + 8 < corrupt.size(); ++i)
    if (corrupt[i] == 0xFF && corrupt[i + 1] == 0xC0) {  // SOF0: length(2) precision(1) height(2)
      corrupt[i + 5] = 0;
      corrupt[i + 6] = 0;
      break;
    }
  write_bytes(dir.file("bad.jpg"), corrupt);
  CHECK_THROWS_WITH(decode_file(dir.file("bad.jpg"), 0), Contains(dir.file("bad.jpg")));
}

TEST_CASE("image: a header claiming an enormous image is refused before decoding") {
  Bytes png = png_bytes(4, 4, 1);
  // IHDR data starts at 16: width then height, big-endian. Claim 30000 x 30000 and fix the CRC.
  for (int k : {16, 20}) {
    png[k] = 0;
    png[k + 1] = 0;
    png[k + 2] = 0x75;
    png[k + 3] = 0x30;
  }
  const auto crc = static_cast<std::uint32_t>(crc32(0, png.data() + 12, 17));
  for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
  Image out;
  CHECK_THROWS_WITH(decode_image(png.data(), png.size(), 0, "huge.png", out),
                    Contains("huge.png") && Contains("larger than the limit"));
}

TEST_CASE(
    "image: a JPEG Huffman table with more than 256 codes is refused (stb_image would overflow)") {
  Bytes jpg = jpeg_bytes(8, 8, 1);
  std::size_t dht = 0;
  for (std::size_t i = 2; i + 1 < jpg.size(); ++i)
    if (jpg[i] == 0xFF && jpg[i + 1] == 0xC4) {
      dht = i;
      break;
    }
  REQUIRE(dht > 0);
  for (std::size_t k = 0; k < 16; ++k)
    jpg[dht + 5 + k] = 255;  // the 16 code counts of its first table
  Image out;
  CHECK_THROWS_WITH(decode_image(jpg.data(), jpg.size(), 0, "dht.jpg", out),
                    Contains("dht.jpg") && Contains("Huffman table with 4080 codes") &&
                        Contains("byte offset " + std::to_string(dht + 4)));
}

TEST_CASE(
    "image: a JPEG scan using a Huffman table no DHT defined is refused (stb_image would read "
    "stale memory)") {
  Bytes jpg = jpeg_bytes(8, 8, 1);
  // Rename the first DHT segment to a comment (COM): its tables are then never defined.
  std::size_t dht = 0;
  for (std::size_t i = 2; i + 1 < jpg.size(); ++i)
    if (jpg[i] == 0xFF && jpg[i + 1] == 0xC4) {
      dht = i;
      break;
    }
  REQUIRE(dht > 0);
  jpg[dht + 1] = 0xFE;
  Image out;
  CHECK_THROWS_WITH(decode_image(jpg.data(), jpg.size(), 0, "nodht.jpg", out),
                    Contains("nodht.jpg") && Contains("never defined"));
  // The progressive fixture, whole, passes the same checks.
  const Bytes prog(std::begin(kProgressiveJpeg), std::end(kProgressiveJpeg));
  CHECK_NOTHROW(decode_image(prog.data(), prog.size(), 0, "prog.jpg", out));
}

TEST_CASE("image header: size and stored channels without decoding; write_png round-trips") {
  const Bytes png = png_bytes(7, 5, 3);
  const auto h = peek_image_header(png.data(), png.size());
  REQUIRE(h.has_value());
  CHECK(h->format == ImageFormat::Png);
  CHECK(h->height == 7);
  CHECK(h->width == 5);
  CHECK(h->channels == 3);
  CHECK_FALSE(h->sixteen_bit);
  const Bytes jpeg = jpeg_bytes(4, 9, 1);
  const auto j = peek_image_header(jpeg.data(), jpeg.size());
  REQUIRE(j.has_value());
  CHECK(j->format == ImageFormat::Jpeg);
  CHECK(j->channels == 3);  // stb_image_write stores even a gray JPEG as three components
  const Bytes text{'h', 'i'};
  CHECK_FALSE(peek_image_header(text.data(), text.size()).has_value());

  TempDir dir;
  const auto pixels = pattern_image(3, 4, 3);
  const std::string ours = dir.file("ours.png");
  data::write_png(ours, 3, 4, 3, pixels.data());
  Bytes bytes;
  read_file_into(ours, bytes);
  Image decoded;
  decode_image(bytes.data(), bytes.size(), 0, ours, decoded);
  CHECK(decoded.shape == ImageShape{3, 4, 3, false, ImageLayout::HWC});
  CHECK(std::equal(pixels.begin(), pixels.end(), decoded.bytes()));
  CHECK_THROWS_WITH(data::write_png(dir.file("none/x.png"), 3, 4, 3, pixels.data()),
                    Contains("none/x.png"));
  CHECK_THROWS_WITH(data::write_png(ours, 0, 4, 3, pixels.data()), Contains("empty image"));
}
