// Writes the fuzzers' seed corpora: small valid PNGs (gray, gray+alpha, RGB, RGBA, 16-bit),
// a baseline and a progressive JPEG, and raw and encoded shards, so that libFuzzer starts
// from inputs that reach deep into the decoders instead of from nothing.
//   make_seeds IMAGE_DIR SHARD_DIR
#include <zlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include "data/shard.h"
#include "tests/data/progressive_jpeg.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#include <stb/stb_image_write.h>

namespace {

using Bytes = std::vector<unsigned char>;

void append(void* context, void* data, int size) {
  auto* out = static_cast<Bytes*>(context);
  out->insert(out->end(), static_cast<unsigned char*>(data),
              static_cast<unsigned char*>(data) + size);
}

void save(const std::string& path, const Bytes& b) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  std::fwrite(b.data(), 1, b.size(), f);
  std::fclose(f);
}

Bytes pixels(int n) {
  Bytes p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = static_cast<unsigned char>(i * 7);
  return p;
}

void be32(Bytes& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<unsigned char>(v >> s));
}
void chunk(Bytes& out, const char* type, const Bytes& data) {
  be32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  be32(out, static_cast<std::uint32_t>(
                crc32(0, out.data() + start, static_cast<uInt>(out.size() - start))));
}
Bytes png16(int w, int h) {
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, ihdr, raw;
  be32(ihdr, static_cast<std::uint32_t>(w));
  be32(ihdr, static_cast<std::uint32_t>(h));
  ihdr.insert(ihdr.end(), {16, 0, 0, 0, 0});
  chunk(out, "IHDR", ihdr);
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);
    for (int x = 0; x < 2 * w; ++x) raw.push_back(static_cast<unsigned char>(x * 31 + y));
  }
  uLongf n = compressBound(static_cast<uLong>(raw.size()));
  Bytes z(n);
  compress(z.data(), &n, raw.data(), static_cast<uLong>(raw.size()));
  z.resize(n);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", {});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds IMAGE_DIR SHARD_DIR\n");
    return 2;
  }
  const std::string images = argv[1], shards = argv[2];
  std::vector<Bytes> encoded;
  for (int c = 1; c <= 4; ++c) {
    Bytes png, jpg;
    const Bytes p = pixels(6 * 5 * c);
    stbi_write_png_to_func(append, &png, 6, 5, c, p.data(), 6 * c);
    save(images + "/seed" + std::to_string(c) + ".png", png);
    encoded.push_back(png);
    if (c == 1 || c == 3) {
      stbi_write_jpg_to_func(append, &jpg, 6, 5, c, p.data(), 90);
      save(images + "/seed" + std::to_string(c) + ".jpg", jpg);
      encoded.push_back(jpg);
    }
  }
  save(images + "/seed16.png", png16(4, 3));
  const Bytes progressive(std::begin(frugal::test::kProgressiveJpeg),
                          std::end(frugal::test::kProgressiveJpeg));
  save(images + "/progressive.jpg", progressive);
  encoded.push_back(progressive);

  using namespace frugal::data;
  const ImageShape shape{3, 2, 1, false, ImageLayout::HWC};
  Bytes data;
  std::vector<ShardView::Entry> entries;
  for (std::uint32_t i = 0; i < 3; ++i) {
    entries.push_back({kShardHeaderBytes + data.size(), 6, i % 2});
    const Bytes p = pixels(6);
    data.insert(data.end(), p.begin(), p.end());
  }
  save(shards + "/raw.frs", build_shard(ShardEncoding::Raw, shape, {"a", "b"}, data, entries));
  data.clear();
  entries.clear();
  for (std::size_t i = 0; i < 2; ++i) {
    entries.push_back(
        {kShardHeaderBytes + data.size(), static_cast<std::uint32_t>(encoded[i].size()), 0});
    data.insert(data.end(), encoded[i].begin(), encoded[i].end());
  }
  save(shards + "/encoded.frs", build_shard(ShardEncoding::Encoded, {}, {"only"}, data, entries));
  return 0;
}
