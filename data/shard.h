// frugal's packed shard format (.frs, version 1; specified in docs/data.md): a 128-byte
// header, the samples back to back (decoded pixels, or the PNG/JPEG file bytes), an index of
// (offset, length, label) per sample, and the class names. Readers memory-map a shard and
// hand out pointers into it; every offset is checked against the file before it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"

namespace frugal::data {

inline constexpr char kShardMagic[8] = {'F', 'R', 'U', 'G', 'S', 'H', 'R', 'D'};
inline constexpr std::uint32_t kShardVersion = 1;
inline constexpr std::size_t kShardHeaderBytes = 128;
inline constexpr std::size_t kShardIndexEntryBytes = 16;

enum class ShardEncoding : std::uint32_t {
  Raw = 1,      // decoded pixels, HWC, every sample of the header's shape and element type
  Encoded = 2,  // the image file's bytes (PNG or JPEG), decoded when read
};

// The parsed and checked contents of one shard, pointing into its bytes.
struct ShardView {
  std::string name;  // the file, for error messages
  ShardEncoding encoding = ShardEncoding::Raw;
  ImageShape shape;  // Raw: every sample's; Encoded: zero
  std::uint64_t count = 0;
  std::vector<std::string> classes;
  const unsigned char* base = nullptr;
  std::size_t size = 0;
  const unsigned char* index = nullptr;

  struct Entry {
    std::uint64_t offset;
    std::uint32_t length, label;
  };
  Entry entry(std::uint64_t i) const;  // i < count (already checked at parse time)
  const unsigned char* sample(std::uint64_t i) const { return base + entry(i).offset; }
};

// Parses and checks a whole shard held in memory: magic, version, header CRC, the recorded
// file size, every offset and length against the file, labels against the class count, the
// index CRC. A frugal::Error names `name` and the byte offset of what is wrong.
ShardView parse_shard(const unsigned char* bytes, std::size_t size, const std::string& name);

// A shard file mapped read-only into memory (no read copies: samples are read in place).
class ShardFile {
 public:
  explicit ShardFile(const std::string& path);
  ~ShardFile();
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;
  const ShardView& view() const { return view_; }
  const std::string& path() const { return view_.name; }

 private:
  void* map_ = nullptr;
  std::size_t size_ = 0;
  ShardView view_;
};

// Writes samples into shards of at most `samples_per_shard` samples named
// <prefix>-00000.frs, <prefix>-00001.frs ... Each shard is assembled in memory and written
// atomically (a crash never leaves a torn shard).
class ShardWriter {
 public:
  // For Raw, `shape` is every sample's (HWC, uint8 or float); for Encoded it is ignored.
  ShardWriter(std::string prefix, ShardEncoding encoding, ImageShape shape,
              std::vector<std::string> classes, std::int64_t samples_per_shard);
  ~ShardWriter();
  void add_raw(const Image& image, std::int64_t label);
  void add_encoded(const unsigned char* bytes, std::size_t size, std::int64_t label);
  // Writes the last shard; returns every file written.
  std::vector<std::string> finish();
  std::uint64_t samples_written() const { return total_; }
  std::uint64_t bytes_written() const { return bytes_; }

 private:
  void check_label(std::int64_t label) const;
  void append(const unsigned char* bytes, std::size_t size, std::int64_t label);
  void flush();

  std::string prefix_;
  ShardEncoding encoding_;
  ImageShape shape_;
  std::vector<std::string> classes_;
  std::int64_t per_shard_;
  std::vector<unsigned char> data_;
  std::vector<ShardView::Entry> entries_;
  std::vector<std::string> files_;
  std::uint64_t total_ = 0, bytes_ = 0;
};

// The bytes of a shard holding these samples (what ShardWriter writes to each file).
std::vector<unsigned char> build_shard(ShardEncoding encoding, const ImageShape& shape,
                                       const std::vector<std::string>& classes,
                                       const std::vector<unsigned char>& data,
                                       const std::vector<ShardView::Entry>& entries);

}  // namespace frugal::data
