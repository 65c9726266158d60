// The idx reader: a byte source (the plain file, or zlib's inflate streaming from it) feeds
// the header checks and then the data, decompressed straight into the tensor's storage.
#include "data/idx.h"

#include <zlib.h>

#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "common/error.h"
#include "data/file_io.h"
#include "engine/ops/factory.h"

namespace frugal::data {

namespace {

constexpr const char* kWhat = "read_idx";
// Deflate cannot expand data by more than about 1032:1, so a gzip file of S bytes holds at
// most this many times S: a larger declared size is a damaged header, refused before
// allocating it.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 46;  // 64 TiB: surely a broken header

[[noreturn]] void fail(const std::string& path, const std::string& message) {
  throw Error(std::string(kWhat) + ": " + path + ": " + message);
}

std::string hex(unsigned value, int digits) {
  static const char* k = "0123456789abcdef";
  std::string s = "0x";
  for (int i = digits - 1; i >= 0; --i) s += k[(value >> (4 * i)) & 0xf];
  return s;
}

// Where the bytes after the gzip check come from.
class Source {
 public:
  virtual ~Source() = default;
  // Reads up to n bytes; fewer only at the end of the data.
  virtual std::size_t read(void* dst, std::size_t n) = 0;
};

class PlainSource final : public Source {
 public:
  explicit PlainSource(InputFile& file) : file_(file) {}
  std::size_t read(void* dst, std::size_t n) override { return file_.read_some(dst, n); }

 private:
  InputFile& file_;
};

// Inflates a gzip file as it is read (concatenated gzip members too, as gunzip does).
// Corruption, a truncated stream and bytes after the last member are errors, since any of
// them means the data cannot be trusted.
class GzipSource final : public Source {
 public:
  explicit GzipSource(InputFile& file) : file_(file), in_(1 << 16) {
    std::memset(&zs_, 0, sizeof zs_);
    if (inflateInit2(&zs_, 15 + 16) != Z_OK)  // 15-bit window, +16: expect a gzip wrapper
      fail(file_.path(), "cannot start zlib's inflate");
  }
  ~GzipSource() override { inflateEnd(&zs_); }

  std::size_t read(void* dst, std::size_t n) override {
    unsigned char* out = static_cast<unsigned char*>(dst);
    std::size_t done = 0;
    while (done < n && !finished_) {
      if (zs_.avail_in == 0) refill();
      const std::size_t chunk = std::min<std::size_t>(n - done, 1u << 30);
      zs_.next_out = out + done;
      zs_.avail_out = static_cast<uInt>(chunk);
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      done += chunk - zs_.avail_out;
      if (rc == Z_STREAM_END) {
        next_member();
      } else if (rc == Z_BUF_ERROR && input_done_) {
        // No progress possible: the compressed input ran out before the stream's end.
        fail(file_.path(),
             "truncated gzip stream: the file ends before the end of the compressed data");
      } else if (rc != Z_OK) {
        fail(file_.path(), std::string("corrupt gzip stream: ") + (zs_.msg ? zs_.msg : zError(rc)));
      }
    }
    return done;
  }

 private:
  void refill() {
    if (input_done_) return;
    const std::size_t got = file_.read_some(in_.data(), in_.size());
    consumed_ += got;
    if (got == 0) input_done_ = true;
    zs_.next_in = in_.data();
    zs_.avail_in = static_cast<uInt>(got);
  }

  // After a member's end: another member follows, or the file must end here.
  void next_member() {
    if (zs_.avail_in == 0) refill();
    if (zs_.avail_in == 0) {
      finished_ = true;
      return;
    }
    if (zs_.avail_in >= 2 && zs_.next_in[0] == 0x1f && zs_.next_in[1] == 0x8b) {
      inflateReset(&zs_);
      return;
    }
    const std::uint64_t trailing = file_.size() - (consumed_ - zs_.avail_in);
    fail(file_.path(),
         std::to_string(trailing) + " trailing bytes after the end of the gzip stream");
  }

  InputFile& file_;
  std::vector<unsigned char> in_;
  z_stream zs_;
  std::uint64_t consumed_ = 0;  // compressed bytes read from the file so far
  bool input_done_ = false, finished_ = false;
};

struct IdxType {
  ScalarType dtype;
  std::size_t file_bytes;  // size of one element in the file
  const char* name;
};

IdxType idx_type(const std::string& path, unsigned code) {
  switch (code) {
    case 0x08:
      return {kUInt8, 1, "ubyte"};
    case 0x0B:
      return {kInt32, 2, "short"};  // widened: frugal has no int16
    case 0x0C:
      return {kInt32, 4, "int"};
    case 0x0D:
      return {kFloat32, 4, "float"};
    case 0x0E:
      return {kFloat64, 8, "double"};
    case 0x09:
      fail(path, "type code 0x09 (signed byte) has no frugal dtype (frugal has uint8 but no int8)");
    default:
      fail(
          path,
          "unknown type code " + hex(code, 2) +
              " (idx knows 0x08 ubyte, 0x09 sbyte, 0x0B short, 0x0C int, 0x0D float, 0x0E double)");
  }
}

// The file is big-endian; the tensor holds native values.
void to_native(void* data, std::int64_t numel, std::size_t file_bytes) {
  if (file_bytes == 2) {
    // Shorts were read into the front of the int32 storage: widen from the back so that no
    // value is overwritten before it has been read.
    auto* bytes = static_cast<const unsigned char*>(data);
    auto* out = static_cast<std::int32_t*>(data);
    for (std::int64_t i = numel - 1; i >= 0; --i)
      out[i] = static_cast<std::int16_t>(
          static_cast<std::uint16_t>((bytes[2 * i] << 8) | bytes[2 * i + 1]));
    return;
  }
  if constexpr (std::endian::native == std::endian::little) {
    if (file_bytes == 4) {
      auto* p = static_cast<std::uint32_t*>(data);
      for (std::int64_t i = 0; i < numel; ++i) p[i] = __builtin_bswap32(p[i]);
    } else if (file_bytes == 8) {
      auto* p = static_cast<std::uint64_t*>(data);
      for (std::int64_t i = 0; i < numel; ++i) p[i] = __builtin_bswap64(p[i]);
    }
  }
}

}  // namespace

Tensor read_idx(const std::string& path) {
  InputFile file(path, kWhat);
  unsigned char head[4] = {};
  const std::size_t peeked = file.read_some(head, 2);
  const bool gzip = peeked == 2 && head[0] == 0x1f && head[1] == 0x8b;
  file.seek(0);
  std::unique_ptr<Source> source;
  if (gzip)
    source = std::make_unique<GzipSource>(file);
  else
    source = std::make_unique<PlainSource>(file);

  std::size_t got = source->read(head, 4);
  if (got < 4)
    fail(path, "truncated header: expected 4 bytes of magic, found " + std::to_string(got));
  const unsigned magic =
      (unsigned{head[0]} << 24) | (unsigned{head[1]} << 16) | (unsigned{head[2]} << 8) | head[3];
  if (head[0] != 0 || head[1] != 0)
    fail(path, "bad magic " + hex(magic, 8) +
                   ": an idx file starts with two zero bytes, a type code and the number of dims");
  const IdxType type = idx_type(path, head[2]);
  const int ndims = head[3];
  if (ndims == 0) fail(path, "the header declares zero dims");
  if (ndims > kMaxDims)
    fail(path, "the header declares " + std::to_string(ndims) +
                   " dims; frugal tensors have at most " + std::to_string(kMaxDims));

  unsigned char dim_bytes[4 * kMaxDims];
  got = source->read(dim_bytes, 4 * static_cast<std::size_t>(ndims));
  if (got < 4u * ndims)
    fail(path, "truncated header: expected " + std::to_string(4 * ndims) +
                   " bytes of dims, found " + std::to_string(got));
  std::vector<std::int64_t> dims(ndims);
  std::uint64_t bytes = type.file_bytes;
  bool empty_dim = false;
  for (int d = 0; d < ndims; ++d) {
    const unsigned char* b = dim_bytes + 4 * d;
    const std::uint32_t v = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                            (std::uint32_t{b[2]} << 8) | b[3];
    if (v > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max()))
      fail(path, "dim " + std::to_string(d) + " is negative (" +
                     std::to_string(static_cast<std::int32_t>(v)) + ")");
    dims[d] = v;
    empty_dim |= v == 0;
    // Saturates just above kMaxBytes rather than wrapping around 2^64 (2^46 x 2^31 would):
    // a wrapped product could pass the checks below and size the tensor wrongly.
    if (v != 0) bytes = bytes > kMaxBytes / v ? kMaxBytes + 1 : bytes * v;
  }
  if (empty_dim) bytes = 0;
  std::string shape = shape_string(dims);
  if (bytes > kMaxBytes) fail(path, "absurd size: dims " + shape + " would need more than 64 TiB");
  const std::uint64_t header = 4 + 4 * static_cast<std::uint64_t>(ndims);
  if (!gzip && file.size() - header < bytes)
    fail(path, "truncated data: dims " + shape + " of " + type.name + " need " +
                   std::to_string(bytes) + " bytes, found " + std::to_string(file.size() - header));
  if (gzip && bytes > file.size() * kMaxDeflateRatio)
    fail(path, "absurd size: dims " + shape + " need " + std::to_string(bytes) +
                   " bytes, more than a gzip file of " + std::to_string(file.size()) +
                   " bytes can hold");

  Tensor t = empty(dims, type.dtype);
  got = source->read(t.data_ptr(), static_cast<std::size_t>(bytes));
  if (got < bytes)
    fail(path, "truncated data: dims " + shape + " of " + type.name + " need " +
                   std::to_string(bytes) + " bytes, found " + std::to_string(got));
  unsigned char rest[4096];
  std::uint64_t trailing = 0;
  while ((got = source->read(rest, sizeof rest)) > 0) trailing += got;
  if (trailing > 0)
    fail(path, std::to_string(trailing) + " trailing bytes after the " + std::to_string(bytes) +
                   " bytes of data that dims " + shape + " of " + type.name + " declare");
  to_native(t.data_ptr(), t.numel(), type.file_bytes);
  return t;
}

}  // namespace frugal::data
