// Image decoding: container checks (PNG chunk lengths and CRCs up to IEND, JPEG segments up
// to EOI) that locate damage by offset, then stb_image for the pixels.
#include "data/image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <stb/stb_image.h>

#include "common/error.h"

namespace frugal::data {

namespace {

const unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

[[noreturn]] void damaged(const std::string& name, const char* format, std::size_t offset,
                          const std::string& what) {
  throw Error(name + ": damaged " + format + " at byte offset " + std::to_string(offset) + ": " +
              what);
}

// Walks the chunks from the signature to IEND, checking that each lies inside the file and
// that its CRC matches (stb_image checks neither, and would decode a damaged file silently).
void check_png(const unsigned char* b, std::size_t n, const std::string& name) {
  std::size_t pos = 8;
  bool first = true;
  for (;;) {
    if (pos + 8 > n) damaged(name, "PNG", pos, "file ends before the IEND chunk (truncated)");
    const std::uint32_t length = be32(b + pos);
    const unsigned char* type = b + pos + 4;
    const std::string type_name(reinterpret_cast<const char*>(type), 4);
    if (length > 0x7fffffffu)
      damaged(name, "PNG", pos, "chunk length " + std::to_string(length) + " is invalid");
    if (first && type_name != "IHDR") damaged(name, "PNG", pos, "the first chunk is not IHDR");
    first = false;
    if (pos + 12 + std::size_t{length} > n)
      damaged(name, "PNG", pos,
              "chunk " + type_name + " of " + std::to_string(length) +
                  " bytes runs past the end of the file (truncated)");
    const std::uint32_t stored = be32(b + pos + 8 + length);
    const auto computed =
        static_cast<std::uint32_t>(crc32(crc32(0L, nullptr, 0), type, length + 4));
    if (stored != computed)
      damaged(name, "PNG", pos,
              "chunk " + type_name + " has CRC " + hex(stored) + " but its bytes give " +
                  hex(computed));
    pos += 12 + std::size_t{length};
    if (type_name == "IEND") return;
  }
}

// The tables of a DHT segment: stb_image (Debian's 2022 version) trusts their code counts and
// writes past its 256-entry arrays when they sum to more (found by tests/fuzz), so each
// table must hold at most 256 codes, and lie inside the segment.
// Which Huffman tables (DC and AC, ids 0-3) some DHT segment has defined so far.
struct HuffmanDefined {
  bool dc[4] = {}, ac[4] = {};
};

void check_jpeg_huffman_tables(const unsigned char* p, std::size_t n, std::size_t offset,
                               const std::string& name, HuffmanDefined& defined) {
  std::size_t pos = 0;
  while (pos < n) {
    if (pos + 17 > n)
      damaged(name, "JPEG", offset + pos, "Huffman table header runs past its segment");
    const unsigned char q = p[pos];
    if ((q >> 4) > 1 || (q & 15) > 3)
      damaged(name, "JPEG", offset + pos, "Huffman table class/id byte " + hex(q) + " is invalid");
    std::size_t codes = 0;
    for (int i = 1; i <= 16; ++i) codes += p[pos + static_cast<std::size_t>(i)];
    if (codes > 256)
      damaged(name, "JPEG", offset + pos,
              "Huffman table with " + std::to_string(codes) + " codes (at most 256)");
    pos += 17 + codes;
    if (pos > n)
      damaged(name, "JPEG", offset + pos - codes, "Huffman table values run past their segment");
    ((q >> 4) == 0 ? defined.dc : defined.ac)[q & 15] = true;
  }
}

// A scan header (SOS): every Huffman table the scan decodes with must have been defined.
// stb_image does not check, and decodes with whatever its (uninitialised) table memory holds,
// reading outside it (found by tests/fuzz: a heap use-after-free read).
void check_jpeg_scan(const unsigned char* p, std::size_t n, std::size_t offset,
                     const std::string& name, const HuffmanDefined& defined) {
  if (n < 1) damaged(name, "JPEG", offset, "empty scan header");
  const std::size_t components = p[0];
  if (components < 1 || components > 4 || n < 1 + 2 * components + 3)
    damaged(name, "JPEG", offset,
            "scan header for " + std::to_string(components) + " components is invalid");
  const unsigned char ss = p[1 + 2 * components], se = p[2 + 2 * components],
                      ah = p[3 + 2 * components] >> 4;
  for (std::size_t c = 0; c < components; ++c) {
    const unsigned char tables = p[2 + 2 * c];
    const int dc = tables >> 4, ac = tables & 15;
    if (dc > 3 || ac > 3)
      damaged(name, "JPEG", offset + 2 + 2 * c, "scan names Huffman table " + hex(tables));
    if (ss == 0 && ah == 0 && !defined.dc[dc])
      damaged(name, "JPEG", offset + 2 + 2 * c,
              "scan uses DC Huffman table " + std::to_string(dc) + ", never defined");
    if (se > 0 && !defined.ac[ac])
      damaged(name, "JPEG", offset + 2 + 2 * c,
              "scan uses AC Huffman table " + std::to_string(ac) + ", never defined");
  }
}

// Walks the JPEG segments: every marker segment must fit in the file, and entropy-coded data
// (where 0xFF is always followed by 0x00 or a restart marker) must end in a marker, the last
// being EOI. stb_image pads a truncated scan with zeros instead of failing.
void check_jpeg(const unsigned char* b, std::size_t n, const std::string& name) {
  std::size_t pos = 2;
  HuffmanDefined huffman;
  for (;;) {
    if (pos >= n) damaged(name, "JPEG", pos, "file ends before the EOI marker (truncated)");
    if (b[pos] != 0xFF) damaged(name, "JPEG", pos, "expected a marker, found byte " + hex(b[pos]));
    while (pos < n && b[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= n) damaged(name, "JPEG", pos, "file ends before the EOI marker (truncated)");
    const unsigned char marker = b[pos++];
    if (marker == 0xD9) return;                                          // EOI
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // no length
    if (pos + 2 > n) damaged(name, "JPEG", pos, "file ends inside a marker (truncated)");
    const std::size_t length = (std::size_t{b[pos]} << 8) | b[pos + 1];
    if (length < 2)
      damaged(name, "JPEG", pos, "segment length " + std::to_string(length) + " is invalid");
    if (pos + length > n)
      damaged(name, "JPEG", pos - 2,
              "segment of " + std::to_string(length) + " bytes runs past the end (truncated)");
    if (marker == 0xC4) check_jpeg_huffman_tables(b + pos + 2, length - 2, pos + 2, name, huffman);
    if (marker == 0xDA) check_jpeg_scan(b + pos + 2, length - 2, pos + 2, name, huffman);
    pos += length;
    if (marker != 0xDA) continue;  // SOS: entropy-coded data follows, up to the next marker
    for (;;) {
      const void* ff = std::memchr(b + pos, 0xFF, n - pos);
      if (!ff)
        damaged(name, "JPEG", n, "scan data runs to the end of the file without EOI (truncated)");
      pos = static_cast<std::size_t>(static_cast<const unsigned char*>(ff) - b);
      if (pos + 1 >= n) damaged(name, "JPEG", pos, "file ends inside the scan data (truncated)");
      const unsigned char next = b[pos + 1];
      if (next == 0x00 || (next >= 0xD0 && next <= 0xD7)) {
        pos += 2;
        continue;
      }
      break;  // a real marker
    }
  }
}

struct StbFree {
  void operator()(void* p) const { stbi_image_free(p); }
};

}  // namespace

std::string ImageShape::str() const {
  return std::to_string(height) + "x" + std::to_string(width) + "x" + std::to_string(channels) +
         (is_float ? " float32 " : " uint8 ") + (layout == ImageLayout::HWC ? "HWC" : "CHW");
}

ImageFormat sniff_image_format(const unsigned char* bytes, std::size_t size) {
  if (size >= 8 && std::memcmp(bytes, kPngSignature, 8) == 0) return ImageFormat::Png;
  if (size >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF)
    return ImageFormat::Jpeg;
  return ImageFormat::Unknown;
}

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::Png:
      return "PNG";
    case ImageFormat::Jpeg:
      return "JPEG";
    default:
      return "unknown";
  }
}

void decode_image(const unsigned char* bytes, std::size_t size, int channels,
                  const std::string& name, Image& out) {
  FRUGAL_CHECK(channels >= 0 && channels <= 4,
               "decode_image: channels must be 0 (as stored), 1, 2, 3 or 4, got " +
                   std::to_string(channels));
  const ImageFormat format = sniff_image_format(bytes, size);
  if (format == ImageFormat::Unknown) {
    std::string start;
    for (std::size_t i = 0; i < std::min<std::size_t>(size, 4); ++i) {
      if (i) start += ' ';
      start += hex(bytes[i]);
    }
    throw Error(name + ": not a PNG or JPEG image (" + std::to_string(size) + " bytes" +
                (size ? ", starting " + start : std::string()) + ")");
  }
  if (format == ImageFormat::Png)
    check_png(bytes, size, name);
  else
    check_jpeg(bytes, size, name);
  FRUGAL_CHECK(size <= 0x7fffffff, name + ": image files over 2 GiB are not supported");
  const int len = static_cast<int>(size);

  int width = 0, height = 0, stored = 0;
  if (!stbi_info_from_memory(bytes, len, &width, &height, &stored))
    throw Error(name + ": cannot read the " + image_format_name(format) +
                " header: " + stbi_failure_reason());
  if (std::int64_t{width} * height > kMaxImagePixels)
    throw Error(name + ": image of " + std::to_string(width) + "x" + std::to_string(height) +
                " pixels is larger than the limit of " + std::to_string(kMaxImagePixels) +
                " pixels");
  const int want = channels ? channels : stored;
  ImageShape shape{height, width, want, false, ImageLayout::HWC};
  int w = 0, h = 0, c = 0;
  if (format == ImageFormat::Png && stbi_is_16_bit_from_memory(bytes, len)) {
    std::unique_ptr<stbi_us, StbFree> pixels(
        stbi_load_16_from_memory(bytes, len, &w, &h, &c, want));
    if (!pixels) throw Error(name + ": cannot decode the 16-bit PNG: " + stbi_failure_reason());
    shape.is_float = true;
    auto* dst = static_cast<float*>(out.reset(shape));
    const std::size_t count = shape.numel();
    for (std::size_t i = 0; i < count; ++i)
      dst[i] = static_cast<float>(pixels.get()[i]) * (1.0f / 65535.0f);
  } else {
    std::unique_ptr<stbi_uc, StbFree> pixels(stbi_load_from_memory(bytes, len, &w, &h, &c, want));
    if (!pixels)
      throw Error(name + ": cannot decode the " + image_format_name(format) + ": " +
                  stbi_failure_reason());
    std::memcpy(out.reset(shape), pixels.get(), shape.nbytes());
  }
  FRUGAL_CHECK(w == width && h == height, name + ": decoded size differs from the header's");
}

std::optional<ImageHeader> peek_image_header(const unsigned char* bytes, std::size_t size) {
  ImageHeader h;
  h.format = sniff_image_format(bytes, size);
  if (h.format == ImageFormat::Unknown || size > 0x7fffffff) return std::nullopt;
  const int len = static_cast<int>(size);
  if (!stbi_info_from_memory(bytes, len, &h.width, &h.height, &h.channels)) return std::nullopt;
  h.sixteen_bit = h.format == ImageFormat::Png && stbi_is_16_bit_from_memory(bytes, len);
  return h;
}

void read_file_into(const std::string& path, std::vector<unsigned char>& buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + std::strerror(e));
  }
  buffer.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < buffer.size()) {
    const ssize_t got = ::read(fd, buffer.data() + done, buffer.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int e = errno;
      ::close(fd);
      throw Error(path + ": read failed after " + std::to_string(done) + " of " +
                  std::to_string(buffer.size()) + " bytes" +
                  (got < 0 ? std::string(": ") + std::strerror(e) : std::string()));
    }
    done += static_cast<std::size_t>(got);
  }
  ::close(fd);
}

}  // namespace frugal::data
