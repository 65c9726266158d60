// Shard reading (parse and check, mmap) and writing (assemble in memory, write atomically).
// Every integer is little-endian; the layout is in docs/data.md.
#include "data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "data/file_io.h"

namespace frugal::data {

namespace {

// Header field offsets.
constexpr std::size_t kVersionAt = 8, kHeaderBytesAt = 12, kEncodingAt = 16, kElementAt = 20,
                      kHeightAt = 24, kWidthAt = 28, kChannelsAt = 32, kClassCountAt = 36,
                      kCountAt = 40, kIndexAt = 48, kClassesAt = 56, kFileSizeAt = 64,
                      kIndexCrcAt = 72, kHeaderCrcAt = 124;

std::uint32_t le32(const unsigned char* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
         (std::uint32_t{p[3]} << 24);
}
std::uint64_t le64(const unsigned char* p) { return le32(p) | (std::uint64_t{le32(p + 4)} << 32); }
void put32(unsigned char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void put64(unsigned char* p, std::uint64_t v) {
  put32(p, static_cast<std::uint32_t>(v));
  put32(p + 4, static_cast<std::uint32_t>(v >> 32));
}
std::uint32_t crc(const unsigned char* p, std::size_t n) {
  uLong c = crc32(0L, nullptr, 0);
  while (n > 0) {  // zlib takes at most 4 GiB - 1 at a time
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    c = crc32(c, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(c);
}

[[noreturn]] void bad(const std::string& name, std::size_t offset, const std::string& what) {
  throw Error(name + ": bad shard at byte offset " + std::to_string(offset) + ": " + what);
}

}  // namespace

ShardView::Entry ShardView::entry(std::uint64_t i) const {
  const unsigned char* e = index + i * kShardIndexEntryBytes;
  return {le64(e), le32(e + 8), le32(e + 12)};
}

ShardView parse_shard(const unsigned char* b, std::size_t n, const std::string& name) {
  ShardView v;
  v.name = name;
  v.base = b;
  v.size = n;
  if (n < kShardHeaderBytes)
    bad(name, 0,
        "the file has " + std::to_string(n) + " bytes, fewer than the " +
            std::to_string(kShardHeaderBytes) + "-byte header (truncated, or not a shard)");
  if (std::memcmp(b, kShardMagic, 8) != 0) bad(name, 0, "no FRUGSHRD magic: not a frugal shard");
  const std::uint32_t version = le32(b + kVersionAt);
  if (version != kShardVersion)
    bad(name, kVersionAt,
        "format version " + std::to_string(version) +
            " is not supported (this reader knows version " + std::to_string(kShardVersion) + ")");
  if (crc(b, kHeaderCrcAt) != le32(b + kHeaderCrcAt))
    bad(name, kHeaderCrcAt, "the header's CRC does not match (damaged header)");
  if (le32(b + kHeaderBytesAt) != kShardHeaderBytes)
    bad(name, kHeaderBytesAt, "header size is not 128");
  const std::uint64_t file_size = le64(b + kFileSizeAt);
  if (file_size != n)
    bad(name, kFileSizeAt,
        "the header says the file has " + std::to_string(file_size) + " bytes but it has " +
            std::to_string(n) + (n < file_size ? " (truncated)" : ""));
  const std::uint32_t encoding = le32(b + kEncodingAt);
  if (encoding != 1 && encoding != 2)
    bad(name, kEncodingAt, "unknown sample encoding " + std::to_string(encoding));
  v.encoding = static_cast<ShardEncoding>(encoding);
  const std::uint32_t element = le32(b + kElementAt);
  if (v.encoding == ShardEncoding::Raw) {
    if (element > 1) bad(name, kElementAt, "unknown element type " + std::to_string(element));
    const std::uint32_t h = le32(b + kHeightAt), w = le32(b + kWidthAt), c = le32(b + kChannelsAt);
    if (h == 0 || w == 0 || c == 0 || c > 4 || h > (1u << 15) || w > (1u << 15))
      bad(name, kHeightAt,
          "sample shape " + std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c) +
              " is invalid");
    v.shape = ImageShape{static_cast<int>(h), static_cast<int>(w), static_cast<int>(c),
                         element == 1, ImageLayout::HWC};
  }
  v.count = le64(b + kCountAt);
  const std::uint64_t index_at = le64(b + kIndexAt), classes_at = le64(b + kClassesAt);
  const std::uint32_t class_count = le32(b + kClassCountAt);
  if (index_at < kShardHeaderBytes || index_at > n || index_at % 8 != 0)
    bad(name, kIndexAt,
        "index offset " + std::to_string(index_at) + " lies outside the file's " +
            std::to_string(n) + " bytes");
  if (v.count > (n - index_at) / kShardIndexEntryBytes ||
      classes_at != index_at + v.count * kShardIndexEntryBytes)
    bad(name, kCountAt,
        std::to_string(v.count) + " index entries from offset " + std::to_string(index_at) +
            " do not fit before the class table at " + std::to_string(classes_at));
  v.index = b + index_at;

  // The class table: (u32 length, bytes) per class, ending exactly at the end of the file.
  std::size_t pos = static_cast<std::size_t>(classes_at);
  for (std::uint32_t c = 0; c < class_count; ++c) {
    if (pos + 4 > n) bad(name, pos, "class table ends early (truncated)");
    const std::uint32_t len = le32(b + pos);
    if (len > n - pos - 4)
      bad(name, pos, "class name " + std::to_string(c) + " runs past the end of the file");
    v.classes.emplace_back(reinterpret_cast<const char*>(b + pos + 4), len);
    pos += 4 + len;
  }
  if (pos != n) bad(name, pos, std::to_string(n - pos) + " unexpected bytes after the class table");

  const std::size_t sample_bytes = v.shape.nbytes();
  const std::size_t align = v.shape.element_bytes();
  for (std::uint64_t i = 0; i < v.count; ++i) {
    const ShardView::Entry e = v.entry(i);
    const std::size_t at = static_cast<std::size_t>(index_at + i * kShardIndexEntryBytes);
    const std::string which = "index entry " + std::to_string(i) + ": ";
    if (e.offset < kShardHeaderBytes || e.offset > index_at || e.length > index_at - e.offset)
      bad(name, at,
          which + "sample bytes [" + std::to_string(e.offset) + ", " +
              std::to_string(e.offset + e.length) + ") lie outside the data region [128, " +
              std::to_string(index_at) + ")");
    if (v.encoding == ShardEncoding::Raw && (e.length != sample_bytes || e.offset % align != 0))
      bad(name, at,
          which + "a raw sample of " + std::to_string(e.length) + " bytes at offset " +
              std::to_string(e.offset) + " does not match the shape " + v.shape.str());
    if (e.label >= class_count)
      bad(name, at,
          which + "label " + std::to_string(e.label) + " is out of range for " +
              std::to_string(class_count) + " classes");
  }
  if (crc(v.index, static_cast<std::size_t>(v.count * kShardIndexEntryBytes)) !=
      le32(b + kIndexCrcAt))
    bad(name, static_cast<std::size_t>(index_at), "the index's CRC does not match (damaged index)");
  return v;
}

ShardFile::ShardFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open shard: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(path + ": cannot stat shard: " + std::strerror(e));
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (map_ == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      map_ = nullptr;
      throw Error(path + ": cannot map shard: " + std::strerror(e));
    }
  }
  ::close(fd);  // the mapping keeps the file
  try {
    view_ = parse_shard(static_cast<const unsigned char*>(map_), size_, path);
  } catch (...) {
    if (map_) ::munmap(map_, size_);
    throw;
  }
}

ShardFile::~ShardFile() {
  if (map_) ::munmap(map_, size_);
}

std::vector<unsigned char> build_shard(ShardEncoding encoding, const ImageShape& shape,
                                       const std::vector<std::string>& classes,
                                       const std::vector<unsigned char>& data,
                                       const std::vector<ShardView::Entry>& entries) {
  const std::size_t index_at = (kShardHeaderBytes + data.size() + 7) / 8 * 8;
  const std::size_t classes_at = index_at + entries.size() * kShardIndexEntryBytes;
  std::size_t size = classes_at;
  for (const auto& c : classes) size += 4 + c.size();
  std::vector<unsigned char> out(size, 0);
  unsigned char* b = out.data();
  std::memcpy(b, kShardMagic, 8);
  put32(b + kVersionAt, kShardVersion);
  put32(b + kHeaderBytesAt, kShardHeaderBytes);
  put32(b + kEncodingAt, static_cast<std::uint32_t>(encoding));
  if (encoding == ShardEncoding::Raw) {
    put32(b + kElementAt, shape.is_float ? 1 : 0);
    put32(b + kHeightAt, static_cast<std::uint32_t>(shape.height));
    put32(b + kWidthAt, static_cast<std::uint32_t>(shape.width));
    put32(b + kChannelsAt, static_cast<std::uint32_t>(shape.channels));
  }
  put32(b + kClassCountAt, static_cast<std::uint32_t>(classes.size()));
  put64(b + kCountAt, entries.size());
  put64(b + kIndexAt, index_at);
  put64(b + kClassesAt, classes_at);
  put64(b + kFileSizeAt, size);
  if (!data.empty()) std::memcpy(b + kShardHeaderBytes, data.data(), data.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    unsigned char* e = b + index_at + i * kShardIndexEntryBytes;
    put64(e, entries[i].offset);
    put32(e + 8, entries[i].length);
    put32(e + 12, entries[i].label);
  }
  put32(b + kIndexCrcAt, crc(b + index_at, entries.size() * kShardIndexEntryBytes));
  std::size_t pos = classes_at;
  for (const auto& c : classes) {
    put32(b + pos, static_cast<std::uint32_t>(c.size()));
    std::memcpy(b + pos + 4, c.data(), c.size());
    pos += 4 + c.size();
  }
  put32(b + kHeaderCrcAt, crc(b, kHeaderCrcAt));
  return out;
}

ShardWriter::ShardWriter(std::string prefix, ShardEncoding encoding, ImageShape shape,
                         std::vector<std::string> classes, std::int64_t samples_per_shard)
    : prefix_(std::move(prefix)),
      encoding_(encoding),
      shape_(shape),
      classes_(std::move(classes)),
      per_shard_(samples_per_shard) {
  FRUGAL_CHECK(per_shard_ > 0, "ShardWriter: samples per shard must be positive, got " +
                                   std::to_string(per_shard_));
  FRUGAL_CHECK(!classes_.empty(), "ShardWriter: at least one class name is needed");
  if (encoding_ == ShardEncoding::Raw)
    FRUGAL_CHECK(shape_.layout == ImageLayout::HWC && shape_.numel() > 0,
                 "ShardWriter: raw samples need a non-empty HWC shape, got " + shape_.str());
}

ShardWriter::~ShardWriter() = default;

void ShardWriter::check_label(std::int64_t label) const {
  FRUGAL_CHECK(label >= 0 && label < static_cast<std::int64_t>(classes_.size()),
               "ShardWriter: label " + std::to_string(label) + " is out of range for " +
                   std::to_string(classes_.size()) + " classes");
}

void ShardWriter::append(const unsigned char* bytes, std::size_t size, std::int64_t label) {
  check_label(label);
  FRUGAL_CHECK(size <= 0xffffffffu,
               "ShardWriter: a sample of " + std::to_string(size) + " bytes is over 4 GiB");
  const std::size_t align = encoding_ == ShardEncoding::Raw ? shape_.element_bytes() : 1;
  data_.resize((data_.size() + align - 1) / align * align, 0);
  entries_.push_back({kShardHeaderBytes + data_.size(), static_cast<std::uint32_t>(size),
                      static_cast<std::uint32_t>(label)});
  data_.insert(data_.end(), bytes, bytes + size);
  ++total_;
  if (static_cast<std::int64_t>(entries_.size()) == per_shard_) flush();
}

void ShardWriter::add_raw(const Image& image, std::int64_t label) {
  FRUGAL_CHECK(encoding_ == ShardEncoding::Raw,
               "ShardWriter: add_raw on a writer of encoded samples");
  FRUGAL_CHECK(image.shape == shape_, "ShardWriter: sample " + std::to_string(total_) + " is " +
                                          image.shape.str() + " but the shards hold " +
                                          shape_.str());
  append(image.bytes(), image.shape.nbytes(), label);
}

void ShardWriter::add_encoded(const unsigned char* bytes, std::size_t size, std::int64_t label) {
  FRUGAL_CHECK(encoding_ == ShardEncoding::Encoded,
               "ShardWriter: add_encoded on a writer of raw samples");
  append(bytes, size, label);
}

void ShardWriter::flush() {
  if (entries_.empty()) return;
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%05zu.frs", files_.size());
  const std::string path = prefix_ + suffix;
  const std::vector<unsigned char> bytes =
      build_shard(encoding_, shape_, classes_, data_, entries_);
  AtomicFile file(path, "ShardWriter");
  file.write(bytes.data(), bytes.size());
  file.commit();
  bytes_ += bytes.size();
  files_.push_back(path);
  data_.clear();
  entries_.clear();
}

std::vector<std::string> ShardWriter::finish() {
  flush();
  return files_;
}

}  // namespace frugal::data
