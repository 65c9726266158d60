// safetensors: round trips of all eight dtypes (0-dim and empty tensors, metadata), the
// exact byte layout, every malformed file refused by file and tensor name, and the atomic
// replacement that keeps the previous checkpoint whole.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "data/file_io.h"
#include "data/safetensors.h"
#include "engine/frugal.h"
#include "temp_dir.h"

using namespace frugal;
using namespace frugal::data;
using Catch::Matchers::Contains;
using test::Bytes;

namespace {

Bytes bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const std::uint8_t*>(c.data_ptr());
  return p ? Bytes(p, p + c.nbytes()) : Bytes();
}

// A file with the given header text (its length prefix computed unless given) and data.
std::string write_raw(const test::TempDir& dir, const std::string& name, const std::string& header,
                      const Bytes& data, std::int64_t length = -1) {
  Bytes b;
  const std::uint64_t n = length >= 0 ? static_cast<std::uint64_t>(length) : header.size();
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  test::write_bytes(dir.file(name), b);
  return dir.file(name);
}

std::string error_of(const std::string& path) {
  try {
    load_safetensors(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("safetensors: all eight dtypes round-trip, with 0-dim and empty tensors and metadata") {
  test::TempDir dir;
  Generator g(7);
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"f32", randn({3, 4}, kFloat32, &g)},
      {"f64", randn({2, 2, 2}, kFloat64, &g)},
      {"f16", randn({5}, kFloat32, &g).to(kFloat16)},
      {"bf16", randn({2, 3}, kFloat32, &g).to(kBFloat16)},
      {"i32", randint(-1000, 1000, {7}, kInt32, &g)},
      {"i64", randint(-(1ll << 40), 1ll << 40, {2, 1}, kInt64, &g)},
      {"u8", randint(0, 256, {9}, kUInt8, &g)},
      {"bool", randint(0, 2, {4}, kInt64, &g).to(kBool)},
      {"scalar", full({}, 2.5, kFloat64)},
      {"empty", empty({0, 3}, kFloat32)},
      {"layer.0.weight/\"quoted\"", ones({1})},
  };
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"step", "1200"}, {"note", "caf\xc3\xa9 \"x\"\n"}};
  save_safetensors(dir.file("m.safetensors"), tensors, metadata);

  const SafetensorsFile file = load_safetensors(dir.file("m.safetensors"));
  CHECK(file.metadata == metadata);
  REQUIRE(file.tensors.size() == tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(file.tensors[i].first == tensors[i].first);  // offset order is the saved order
    const Tensor& got = file.tensors[i].second;
    CHECK(got.dtype() == tensors[i].second.dtype());
    CHECK(got.sizes() == tensors[i].second.sizes());
    CHECK(bytes_of(got) == bytes_of(tensors[i].second));
    CHECK(tensor_crc32(got) == tensor_crc32(tensors[i].second));
  }
  CHECK(file.at("scalar").dim() == 0);
  CHECK(file.at("scalar").item<double>() == 2.5);
  CHECK(file.at("empty").numel() == 0);
  CHECK_THROWS_WITH(file.at("nope"), Contains("no tensor named \"nope\""));

  // No tensors at all is a valid file too.
  save_safetensors(dir.file("none.safetensors"), {});
  CHECK(load_safetensors(dir.file("none.safetensors")).tensors.empty());
}

TEST_CASE("safetensors: the byte layout is exactly the format's") {
  test::TempDir dir;
  const float a[] = {1.0f, -2.0f};
  const std::uint8_t b[] = {1, 2, 3};
  save_safetensors(dir.file("x.safetensors"),
                   {{"a", from_data(a, {2}, kFloat32)}, {"b", from_data(b, {3, 1}, kUInt8)}},
                   {{"format", "pt"}});
  const Bytes file = test::read_bytes(dir.file("x.safetensors"));
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[3,1],"data_offsets":[8,11]}})";
  header.append((8 - header.size() % 8) % 8, ' ');  // padded so that the data is 8-aligned
  REQUIRE(file.size() == 8 + header.size() + 11);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[i];  // little-endian length prefix
  CHECK(n == header.size());
  CHECK((8 + n) % 8 == 0);
  CHECK(std::string(file.begin() + 8, file.begin() + 8 + n) == header);
  Bytes expected(11);
  std::memcpy(expected.data(), a, 8);
  std::memcpy(expected.data() + 8, b, 3);
  CHECK(Bytes(file.begin() + 8 + n, file.end()) == expected);
}

TEST_CASE("safetensors: views are written as contiguous data, and names are checked") {
  test::TempDir dir;
  Tensor base = arange(12, kFloat32).view({3, 4});
  Tensor t = base.t();
  REQUIRE_FALSE(t.is_contiguous());
  Tensor w = ones({2}).requires_grad_();
  save_safetensors(dir.file("v.safetensors"), {{"t", t}, {"row", base[1]}, {"w", w}});
  const SafetensorsFile f = load_safetensors(dir.file("v.safetensors"));
  CHECK(f.at("t").sizes() == IntArrayRef{4, 3});
  CHECK(f.at("t")[3][1].item<float>() == 7.0f);
  CHECK(f.at("row").sizes() == IntArrayRef{4});
  CHECK(f.at("row")[0].item<float>() == 4.0f);
  CHECK_FALSE(f.at("w").requires_grad());
  CHECK(tensor_crc32(t) == tensor_crc32(t.contiguous()));

  const std::string p = dir.file("bad.safetensors");
  CHECK_THROWS_WITH(save_safetensors(p, {{"a", ones({1})}, {"a", ones({2})}}),
                    Contains("duplicate tensor name \"a\"") && Contains(p));
  CHECK_THROWS_WITH(save_safetensors(p, {{"", ones({1})}}), Contains("empty name"));
  CHECK_THROWS_WITH(save_safetensors(p, {{"__metadata__", ones({1})}}), Contains("reserved"));
  CHECK_THROWS_WITH(save_safetensors(p, {{"u", Tensor()}}), Contains("tensor \"u\" is undefined"));
  CHECK_FALSE(std::filesystem::exists(p));
  CHECK_FALSE(std::filesystem::exists(p + ".tmp"));
}

TEST_CASE("safetensors: tensor_crc32 is zlib's crc32 of the bytes") {
  const char digits[] = "123456789";
  CHECK(tensor_crc32(from_data(digits, {9}, kUInt8)) == 0xCBF43926u);  // the standard check value
  CHECK(tensor_crc32(empty({0})) == 0u);
}

TEST_CASE("safetensors: malformed files are refused, naming the file and the tensor") {
  test::TempDir dir;
  const Bytes eight(8, 0);
  auto one = [](const std::string& name, const std::string& body) {
    return "{\"" + name + "\":" + body + "}";
  };
  std::string p;

  test::write_bytes(dir.file("tiny"), {1, 2, 3});
  CHECK_THAT(error_of(dir.file("tiny")), Contains(dir.file("tiny")) && Contains("too short"));
  CHECK_THAT(error_of(dir.file("missing")),
             Contains(dir.file("missing")) && Contains("cannot open"));
  p = write_raw(dir, "len", "{}", {}, 1000);
  CHECK_THAT(error_of(p),
             Contains(p) && Contains("header length 1000 goes beyond the file of 10 bytes"));
  p = write_raw(dir, "json", "{\"a\": {\"dtype\": \"F32\",}}", {});
  CHECK_THAT(error_of(p),
             Contains(p) && Contains("invalid JSON header: byte 22: expected a string key"));
  p = write_raw(dir, "array", "[]", {});
  CHECK_THAT(error_of(p), Contains(p) && Contains("must be a JSON object, found array"));
  p = write_raw(dir, "dtype", one("w", R"({"dtype":"Q7","shape":[2],"data_offsets":[0,8]})"),
                eight);
  CHECK_THAT(error_of(p),
             Contains(p) && Contains("tensor \"w\"") && Contains("unknown dtype \"Q7\""));
  p = write_raw(dir, "i8", one("w", R"({"dtype":"I8","shape":[8],"data_offsets":[0,8]})"), eight);
  CHECK_THAT(error_of(p), Contains("tensor \"w\"") && Contains("dtype I8 is not supported"));
  p = write_raw(dir, "size", one("w", R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"),
                eight);
  CHECK_THAT(error_of(p), Contains(p) && Contains("tensor \"w\"") &&
                              Contains("needs 12 bytes but data_offsets [0, 8] span 8"));
  p = write_raw(dir, "reversed", one("w", R"({"dtype":"U8","shape":[0],"data_offsets":[8,4]})"),
                eight);
  CHECK_THAT(error_of(p), Contains("tensor \"w\"") && Contains("0 <= begin <= end"));
  p = write_raw(dir, "negative", one("w", R"({"dtype":"U8","shape":[2],"data_offsets":[-2,0]})"),
                eight);
  CHECK_THAT(error_of(p), Contains("tensor \"w\"") && Contains("0 <= begin <= end"));
  p = write_raw(dir, "range", one("w", R"({"dtype":"F64","shape":[100],"data_offsets":[0,800]})"),
                eight);
  CHECK_THAT(error_of(p), Contains(p) && Contains("tensor \"w\"") &&
                              Contains("reach past the end") && Contains("holds 8 bytes"));
  p = write_raw(
      dir, "truncated",
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
      eight);
  CHECK_THAT(error_of(p), Contains("tensor \"b\"") && Contains("reach past the end"));
  p = write_raw(
      dir, "overlap",
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      eight);
  CHECK_THAT(error_of(p),
             Contains(p) && Contains("tensor \"b\"") && Contains("overlap tensor \"a\""));
  p = write_raw(
      dir, "gap",
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})",
      eight);
  CHECK_THAT(error_of(p),
             Contains("tensor \"b\"") && Contains("gap of 2 bytes after tensor \"a\""));
  p = write_raw(dir, "gap0", one("w", R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})"),
                eight);
  CHECK_THAT(error_of(p), Contains("gap of 4 bytes after the header"));
  p = write_raw(dir, "trailing", one("w", R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"),
                eight);
  CHECK_THAT(error_of(p), Contains(p) && Contains("4 trailing bytes after the last tensor"));
  p = write_raw(dir, "nokey", one("w", R"({"dtype":"F32","shape":[2]})"), eight);
  CHECK_THAT(error_of(p), Contains("tensor \"w\"") && Contains("missing \"data_offsets\""));
  p = write_raw(dir, "extra", one("w", R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1})"),
                eight);
  CHECK_THAT(error_of(p), Contains("unexpected key \"x\""));
  p = write_raw(dir, "shape", one("w", R"({"dtype":"F32","shape":["2"],"data_offsets":[0,8]})"),
                eight);
  CHECK_THAT(error_of(p), Contains("tensor \"w\"") && Contains("non-negative integers"));
  p = write_raw(dir, "shapekind", one("w", R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})"),
                eight);
  CHECK_THAT(error_of(p), Contains("\"shape\" must be array, found integer"));
  p = write_raw(dir, "dims",
                one("w", R"({"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]})"),
                {1});
  CHECK_THAT(error_of(p), Contains("9 dims"));
  p = write_raw(dir, "huge",
                one("w", R"({"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]})"),
                eight);
  CHECK_THAT(error_of(p), Contains("more than 2^64"));
  p = write_raw(dir, "meta", R"({"__metadata__":{"step":12}})", {});
  CHECK_THAT(error_of(p),
             Contains(p) && Contains("value of \"step\" must be a string, found integer"));
  p = write_raw(dir, "bool", one("flags", R"({"dtype":"BOOL","shape":[3],"data_offsets":[0,3]})"),
                {1, 0, 2});
  CHECK_THAT(error_of(p), Contains("tensor \"flags\"") && Contains("element 2 holds byte 2"));
  p = write_raw(
      dir, "dup",
      R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})",
      {});
  CHECK_THAT(error_of(p), Contains("duplicate key \"a\""));
  // Header padding of spaces is accepted, as are several empty tensors at one offset.
  p = write_raw(
      dir, "ok",
      R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"c":{"dtype":"U8","shape":[0],"data_offsets":[1,1]}}   )",
      {5});
  CHECK(load_safetensors(p).at("b").item<std::int64_t>() == 5);
}

TEST_CASE("safetensors: saving is atomic: the previous file survives a failed or killed save") {
  test::TempDir dir;
  const std::string p = dir.file("ckpt.safetensors");
  save_safetensors(p, {{"w", full({4}, 1.0)}});
  CHECK_FALSE(std::filesystem::exists(p + ".tmp"));
  save_safetensors(p, {{"w", full({4}, 2.0)}, {"b", zeros({2})}});  // replaced whole
  CHECK(load_safetensors(p).at("w")[0].item<float>() == 2.0f);
  CHECK(load_safetensors(p).tensors.size() == 2);
  CHECK_FALSE(std::filesystem::exists(p + ".tmp"));

  // A save killed midway leaves a partial .tmp beside an intact file; the next save
  // overwrites the leftover.
  test::write_bytes(p + ".tmp", {1, 2, 3});
  CHECK(load_safetensors(p).at("w")[0].item<float>() == 2.0f);
  save_safetensors(p, {{"w", full({4}, 3.0)}});
  CHECK(load_safetensors(p).at("w")[0].item<float>() == 3.0f);
  CHECK_FALSE(std::filesystem::exists(p + ".tmp"));

  // A writer that fails before commit removes its temporary and leaves the file alone.
  {
    AtomicFile out(p, "test");
    out.write("partial", 7);
    CHECK(std::filesystem::exists(p + ".tmp"));
  }
  CHECK_FALSE(std::filesystem::exists(p + ".tmp"));
  CHECK(load_safetensors(p).at("w")[0].item<float>() == 3.0f);

  // When the temporary cannot even be created, the error says so and names the file.
  std::filesystem::create_directory(p + ".tmp");
  CHECK_THROWS_WITH(save_safetensors(p, {{"w", full({4}, 4.0)}}),
                    Contains("cannot create " + p + ".tmp"));
  CHECK(load_safetensors(p).at("w")[0].item<float>() == 3.0f);
  std::filesystem::remove(p + ".tmp");
  // A directory that does not exist.
  CHECK_THROWS_WITH(save_safetensors(dir.file("no/such/dir.safetensors"), {{"w", ones({1})}}),
                    Contains("no/such/dir"));
}
