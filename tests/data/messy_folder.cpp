// frugal-test-messy-folder ROOT: writes the kind of class-folder tree a user's disk holds, for
// tests/examples/train_folder.sh: 15 readable images of every kind frugal decodes (8- and
// 16-bit PNG; gray, gray + alpha, RGB, RGBA and palette; baseline and progressive JPEG; odd
// sizes and aspect ratios) in 3 classes, and 7 damaged files, one of each kind of damage,
// the first of them where the folder scan meets it. Prints the counts and the damaged
// files' names.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "image_files.h"
#include "progressive_jpeg.h"
#include "temp_dir.h"

using namespace frugal::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> damaged;

void bad(const fs::path& path, const Bytes& bytes) {
  write_bytes(path.string(), bytes);
  damaged.push_back(path.string());
}

std::vector<std::uint16_t> pattern16(int height, int width, int channels) {
  std::vector<std::uint16_t> p(static_cast<std::size_t>(height * width * channels));
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::uint16_t>(i * 977u);
  return p;
}

void palette_png(const fs::path& path, int height, int width) {
  std::vector<std::uint8_t> palette, indices;
  for (int i = 0; i < 16; ++i) palette.insert(palette.end(), {std::uint8_t(i * 16), std::uint8_t(255 - i * 16), 90});
  for (int i = 0; i < height * width; ++i) indices.push_back(static_cast<std::uint8_t>((i / 3) % 16));
  write_png_palette(path.string(), height, width, palette, indices);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: frugal-test-messy-folder ROOT\n");
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* c : {"gray", "rgb", "mixed"}) fs::create_directories(root / c);
  auto png = [&](const fs::path& p, int h, int w, int c) {
    write_png(p.string(), h, w, c, pattern_image(h, w, c).data());
  };
  auto jpeg = [&](const fs::path& p, int h, int w, int c, int quality = 90) {
    write_jpeg(p.string(), h, w, c, pattern_image(h, w, c).data(), quality);
  };
  // gray/: the scan's first file is a decompression bomb.
  write_png_bomb((root / "gray" / "0-bomb.png").string(), 9000, 9000);
  damaged.push_back((root / "gray" / "0-bomb.png").string());
  png(root / "gray" / "g1.png", 23, 31, 1);
  png(root / "gray" / "g2.png", 40, 24, 2);  // gray + alpha
  jpeg(root / "gray" / "g3.jpg", 37, 37, 1);
  write_png16((root / "gray" / "g4.png").string(), 19, 45, 1, pattern16(19, 45, 1).data());
  palette_png(root / "gray" / "g5.png", 33, 21);
  {
    Bytes b = png_bytes(30, 30, 1);
    b.resize(b.size() / 2);
    bad(root / "gray" / "truncated.png", b);
    Bytes j = jpeg_bytes(30, 30, 1);
    j.resize(j.size() - 40);
    bad(root / "gray" / "truncated.jpg", j);
  }
  // rgb/
  png(root / "rgb" / "c1.png", 50, 30, 3);
  png(root / "rgb" / "c2.png", 28, 28, 4);  // RGBA
  jpeg(root / "rgb" / "c3.jpg", 45, 61, 3);
  write_bytes((root / "rgb" / "c4.jpg").string(),
              Bytes(std::begin(kProgressiveJpeg), std::end(kProgressiveJpeg)));
  write_png16((root / "rgb" / "c5.png").string(), 30, 41, 3, pattern16(30, 41, 3).data());
  bad(root / "rgb" / "empty.jpg", {});
  {
    const std::string text = "not an image, only named like one\n";
    bad(root / "rgb" / "notes.png", Bytes(text.begin(), text.end()));
    Bytes b = png_bytes(20, 20, 3);
    b[b.size() / 2] ^= 0x10;  // one bit of the pixel data: the IDAT CRC no longer matches
    bad(root / "rgb" / "crc.png", b);
  }
  // mixed/
  palette_png(root / "mixed" / "m1.png", 64, 48);
  jpeg(root / "mixed" / "m2.jpg", 99, 17, 3, 70);
  png(root / "mixed" / "m3.png", 8, 8, 1);  // smaller than the crop
  png(root / "mixed" / "m4.png", 31, 29, 4);
  jpeg(root / "mixed" / "m5.jpg", 26, 52, 1);
  {
    // A bit-flipped JPEG header: one code count of the first Huffman table gains 255.
    Bytes j = jpeg_bytes(24, 24, 3);
    for (std::size_t i = 0; i + 13 < j.size(); ++i)
      if (j[i] == 0xFF && j[i + 1] == 0xC4) {
        j[i + 13] ^= 0xFF;
        break;
      }
    bad(root / "mixed" / "flipped-header.jpg", j);
  }
  std::printf("readable 15, damaged %zu\n", damaged.size());
  for (const auto& d : damaged) std::printf("%s\n", d.c_str());
  return 0;
}
