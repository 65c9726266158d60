// idx files: every type code read back exactly from plain and gzip files written here, and
// every kind of damage (magic, type, dims, truncation, trailing bytes, gzip corruption)
// refused with a message that names the file.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>

#include "allocator/default_allocators.h"
#include "data/idx.h"
#include "engine/frugal.h"
#include "temp_dir.h"

using namespace frugal;
using Catch::Matchers::Contains;
using test::Bytes;

namespace {

void put_be(Bytes& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

Bytes idx_header(std::uint8_t type, const std::vector<std::uint32_t>& dims) {
  Bytes b = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (auto d : dims) put_be(b, d, 4);
  return b;
}

template <class T>
Bytes idx_file(std::uint8_t type, const std::vector<std::uint32_t>& dims,
               const std::vector<T>& values) {
  Bytes b = idx_header(type, dims);
  for (T v : values) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    put_be(b, bits, sizeof v);
  }
  return b;
}

std::string error_of(const std::string& path) {
  try {
    data::read_idx(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("idx: every type code round-trips, plain and gzip") {
  test::TempDir dir;
  for (bool gz : {false, true}) {
    auto write = [&](const std::string& name, const Bytes& b) {
      const std::string path = dir.file(name + (gz ? ".gz" : ""));
      gz ? test::write_gzip(path, b) : test::write_bytes(path, b);
      return path;
    };
    SECTION(gz ? "gzip" : "plain") {
      Tensor u = data::read_idx(
          write("u8", idx_file<std::uint8_t>(0x08, {2, 3}, {0, 1, 2, 127, 128, 255})));
      REQUIRE(u.dtype() == kUInt8);
      CHECK(u.sizes() == IntArrayRef{2, 3});
      CHECK(u[1][2].item<std::int64_t>() == 255);
      CHECK(u[1][0].item<std::int64_t>() == 127);

      Tensor s =
          data::read_idx(write("i16", idx_file<std::int16_t>(0x0B, {4}, {-32768, -1, 0, 32767})));
      REQUIRE(s.dtype() == kInt32);  // widened, sign kept
      const std::int32_t* sp = s.data_ptr<std::int32_t>();
      CHECK(std::vector<std::int32_t>(sp, sp + 4) ==
            std::vector<std::int32_t>{-32768, -1, 0, 32767});

      Tensor i = data::read_idx(write(
          "i32", idx_file<std::int32_t>(
                     0x0C, {1, 1, 3}, {std::numeric_limits<std::int32_t>::min(), -7, 123456789})));
      REQUIRE(i.dtype() == kInt32);
      CHECK(i.sizes() == IntArrayRef{1, 1, 3});
      CHECK(i.data_ptr<std::int32_t>()[0] == std::numeric_limits<std::int32_t>::min());
      CHECK(i.data_ptr<std::int32_t>()[2] == 123456789);

      Tensor f = data::read_idx(write("f32", idx_file<float>(0x0D, {3}, {1.5f, -0.0f, 3.25e-5f})));
      REQUIRE(f.dtype() == kFloat32);
      CHECK(f.data_ptr<float>()[0] == 1.5f);
      CHECK(std::signbit(f.data_ptr<float>()[1]));
      CHECK(f.data_ptr<float>()[2] == 3.25e-5f);

      Tensor d =
          data::read_idx(write("f64", idx_file<double>(0x0E, {2}, {3.141592653589793, -1e300})));
      REQUIRE(d.dtype() == kFloat64);
      CHECK(d.data_ptr<double>()[0] == 3.141592653589793);
      CHECK(d.data_ptr<double>()[1] == -1e300);

      Tensor e = data::read_idx(write("empty", idx_file<std::uint8_t>(0x08, {0, 28, 28}, {})));
      CHECK(e.sizes() == IntArrayRef{0, 28, 28});
    }
  }
}

TEST_CASE("idx: storage comes from the caching allocator") {
  test::TempDir dir;
  std::vector<float> values(1000, 2.0f);
  test::write_gzip(dir.file("f.gz"), idx_file<float>(0x0D, {10, 100}, values));
  auto requested = [] { return alloc::cpu_allocator().stats().requested_bytes.all().current; };
  const std::int64_t before = requested();
  {
    Tensor t = data::read_idx(dir.file("f.gz"));
    CHECK(requested() - before == 4000);
    CHECK(t.sum().item<float>() == 2000.0f);
  }
  CHECK(requested() == before);
}

TEST_CASE("idx: concatenated gzip members read as one stream, as gunzip does") {
  test::TempDir dir;
  const Bytes whole = idx_file<std::uint8_t>(0x08, {6}, {1, 2, 3, 4, 5, 6});
  test::write_gzip(dir.file("a.gz"), Bytes(whole.begin(), whole.begin() + 7));
  test::write_gzip(dir.file("b.gz"), Bytes(whole.begin() + 7, whole.end()));
  Bytes joined = test::read_bytes(dir.file("a.gz"));
  const Bytes b = test::read_bytes(dir.file("b.gz"));
  joined.insert(joined.end(), b.begin(), b.end());
  test::write_bytes(dir.file("joined.gz"), joined);
  Tensor t = data::read_idx(dir.file("joined.gz"));
  CHECK(t.sizes() == IntArrayRef{6});
  CHECK(t[5].item<std::int64_t>() == 6);
}

TEST_CASE("idx: damaged files are refused with the file's name and the fault") {
  test::TempDir dir;
  const Bytes good = idx_file<std::uint8_t>(0x08, {2, 2}, {1, 2, 3, 4});
  auto plain = [&](const std::string& name, const Bytes& b) {
    test::write_bytes(dir.file(name), b);
    return dir.file(name);
  };

  std::string p = dir.file("missing");
  CHECK_THAT(error_of(p), Contains(p) && Contains("cannot open"));
  CHECK_THAT(error_of(dir.path().string()), Contains("is a directory"));

  p = plain("magic", {1, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4});
  CHECK_THAT(error_of(p), Contains(p) && Contains("bad magic 0x01000802"));
  p = plain("short", {0, 0, 8});
  CHECK_THAT(error_of(p), Contains(p) && Contains("expected 4 bytes of magic, found 3"));
  p = plain("type", idx_file<std::uint8_t>(0x0A, {4}, {1, 2, 3, 4}));
  CHECK_THAT(error_of(p), Contains(p) && Contains("unknown type code 0x0a"));
  p = plain("sbyte", idx_file<std::uint8_t>(0x09, {4}, {1, 2, 3, 4}));
  CHECK_THAT(error_of(p), Contains(p) && Contains("0x09") && Contains("no frugal dtype"));
  p = plain("zero-dims", {0, 0, 8, 0, 7});
  CHECK_THAT(error_of(p), Contains(p) && Contains("zero dims"));
  p = plain("nine-dims", idx_header(0x08, std::vector<std::uint32_t>(9, 1)));
  CHECK_THAT(error_of(p), Contains(p) && Contains("9 dims") && Contains("at most 8"));
  p = plain("dims-cut", Bytes(good.begin(), good.begin() + 10));
  CHECK_THAT(error_of(p), Contains(p) && Contains("expected 8 bytes of dims, found 6"));
  p = plain("negative", idx_header(0x08, {0xffffffffu}));
  CHECK_THAT(error_of(p), Contains(p) && Contains("dim 0 is negative (-1)"));
  p = plain("absurd", idx_header(0x0E, {0x7fffffffu, 0x7fffffffu, 0x7fffffffu}));
  CHECK_THAT(error_of(p), Contains(p) && Contains("absurd size"));

  p = plain("truncated", Bytes(good.begin(), good.end() - 1));
  CHECK_THAT(error_of(p),
             Contains(p) && Contains("truncated data") && Contains("need 4 bytes, found 3"));
  Bytes longer = good;
  longer.insert(longer.end(), {9, 9, 9});
  p = plain("trailing", longer);
  CHECK_THAT(error_of(p), Contains(p) && Contains("3 trailing bytes"));
}

TEST_CASE("idx: dims whose product passes 2^64 are refused, not wrapped (found by fuzz_idx)") {
  // 1638400 x 2^25 x 50331648 x ... : the byte count once wrapped around 2^64 to a value that
  // passed every size check, and the tensor was made with an overflowing element count.
  test::TempDir dir;
  const Bytes header = idx_header(0x08, {1638400u, 33554432u, 50331648u, 58098039u});
  test::write_gzip(dir.file("wrapped.gz"), header);
  CHECK_THAT(error_of(dir.file("wrapped.gz")), Contains("wrapped.gz") && Contains("absurd size"));
  test::write_bytes(dir.file("wrapped"), header);
  CHECK_THAT(error_of(dir.file("wrapped")), Contains("absurd size"));
  // A zero among huge dims is an empty tensor, as it should be.
  test::write_bytes(dir.file("empty"),
                    idx_header(0x08, {0x7fffffffu, 0x7fffffffu, 0x7fffffffu, 0}));
  CHECK(data::read_idx(dir.file("empty")).numel() == 0);
}

TEST_CASE("idx: damaged gzip files are refused with the file's name and zlib's reason") {
  test::TempDir dir;
  std::vector<std::uint8_t> pixels(4096);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<std::uint8_t>(i * 7 % 251);
  const Bytes good = idx_file<std::uint8_t>(0x08, {4096}, pixels);
  test::write_gzip(dir.file("good.gz"), good);
  const Bytes gz = test::read_bytes(dir.file("good.gz"));
  REQUIRE(data::read_idx(dir.file("good.gz")).numel() == 4096);

  auto write = [&](const std::string& name, const Bytes& b) {
    test::write_bytes(dir.file(name), b);
    return dir.file(name);
  };

  // A flipped byte in the deflate data: either an invalid code or a failed CRC check.
  Bytes corrupt = gz;
  corrupt[corrupt.size() / 2] ^= 0x55;
  corrupt[corrupt.size() / 2 + 1] ^= 0xaa;
  std::string p = write("corrupt.gz", corrupt);
  CHECK_THAT(error_of(p), Contains(p) && Contains("corrupt gzip stream"));
  // Only the CRC in the trailer is wrong.
  Bytes bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 1;
  p = write("crc.gz", bad_crc);
  CHECK_THAT(error_of(p),
             Contains(p) && Contains("corrupt gzip stream") && Contains("incorrect data check"));

  p = write("cut.gz", Bytes(gz.begin(), gz.end() - 20));
  CHECK_THAT(error_of(p), Contains(p) && Contains("truncated gzip stream"));

  Bytes trailing = gz;
  trailing.insert(trailing.end(), {'j', 'u', 'n', 'k'});
  p = write("trailing.gz", trailing);
  CHECK_THAT(error_of(p),
             Contains(p) && Contains("4 trailing bytes after the end of the gzip stream"));

  // Well-formed gzip whose content is short or long.
  test::write_gzip(dir.file("short.gz"), Bytes(good.begin(), good.end() - 96));
  CHECK_THAT(error_of(dir.file("short.gz")),
             Contains("short.gz") && Contains("need 4096 bytes, found 4000"));
  Bytes longer = good;
  longer.push_back(0);
  test::write_gzip(dir.file("long.gz"), longer);
  CHECK_THAT(error_of(dir.file("long.gz")), Contains("long.gz") && Contains("1 trailing bytes"));
  // A header declaring far more than the compressed file can expand to is refused before
  // anything is allocated.
  test::write_gzip(dir.file("huge.gz"), idx_header(0x08, {1u << 30, 1u << 10}));
  CHECK_THAT(error_of(dir.file("huge.gz")),
             Contains("huge.gz") && Contains("more than a gzip file"));
}
