// Packed shards: raw and encoded samples written and read back through a DataLoader exactly,
// samples read in place from the mapping, and damaged shards — bad magic, unknown version,
// truncation, an index entry pointing outside the file, a label out of range, a damaged
// index — each an error naming the file and the byte offset.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <cstring>

#include "data/data_loader.h"
#include "data/image_folder.h"
#include "data/shard_dataset.h"
#include "engine/frugal.h"
#include "image_files.h"
#include "temp_dir.h"

using namespace frugal;
using namespace frugal::data;
using namespace frugal::test;
using Catch::Matchers::Contains;

namespace {

const std::vector<std::string> kClasses = {"even", "odd"};

// n raw 5x4x1 samples, sample i filled with value i, label i % 2, 4 per shard.
std::vector<std::string> write_raw(const TempDir& dir, int n) {
  ShardWriter writer(dir.file("train"), ShardEncoding::Raw, {5, 4, 1, false, ImageLayout::HWC},
                     kClasses, 4);
  Image im;
  for (int i = 0; i < n; ++i) {
    std::memset(im.reset({5, 4, 1, false, ImageLayout::HWC}), i, 20);
    writer.add_raw(im, i % 2);
  }
  return writer.finish();
}

void put32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint64_t get64(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[at + i];
  return v;
}
// Re-seals the header CRC after an edit, so that the reader's deeper checks are reached.
void reseal_header(Bytes& b) { put32(b, 124, static_cast<std::uint32_t>(crc32(0, b.data(), 124))); }
void reseal_index(Bytes& b) {
  const std::uint64_t index = get64(b, 48), count = get64(b, 40);
  put32(b, 72,
        static_cast<std::uint32_t>(crc32(0, b.data() + index, static_cast<uInt>(count * 16))));
  reseal_header(b);
}

std::string open_error(const std::string& path) {
  try {
    ShardFile file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("shards: raw samples round-trip through several shards, read in place") {
  TempDir dir;
  const auto files = write_raw(dir, 10);
  REQUIRE(files.size() == 3);  // 4 + 4 + 2
  CHECK(files[0] == dir.file("train-00000.frs"));
  auto set = std::make_shared<ShardDataset>(std::vector<std::string>{dir.path().string()});
  CHECK(set->size() == 10);
  CHECK(set->num_shards() == 3);
  CHECK(set->classes() == kClasses);
  CHECK(set->group_sizes() == std::vector<std::int64_t>{4, 4, 2});
  CHECK(set->spec().data_sizes == DimVector{1, 5, 4});
  CHECK(set->spec().data_dtype == kUInt8);
  CHECK_THAT(set->source(5), Contains("train-00001.frs") && Contains("sample 1"));
  for (int workers : {0, 2}) {
    DataLoader loader(set, std::make_shared<ShardShuffleSampler>(set->group_sizes(), 3),
                      {.batch_size = 3, .num_workers = workers});
    std::vector<int> seen;
    for (Batch& b : loader)
      for (std::int64_t r = 0; r < b.data.size(0); ++r) {
        const int value = b.data.data_ptr<std::uint8_t>()[r * 20 + 19];
        CHECK(b.target.data_ptr<std::int64_t>()[r] == value % 2);
        seen.push_back(value);
      }
    std::sort(seen.begin(), seen.end());
    CHECK(seen == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  // Transforms apply to the mapped pixels as to decoded ones.
  auto normalized = std::make_shared<ShardDataset>(
      files, ShardDatasetOptions{
                 .transform = {std::make_shared<ToTensor>(),
                               std::make_shared<Normalize>(std::vector<float>{0.0f},
                                                           std::vector<float>{2.0f / 255.0f})}});
  float out[20];
  std::int64_t label;
  normalized->get(7, {out, &label, 0});
  CHECK(out[0] == Approx(3.5f));
  CHECK(label == 1);
}

TEST_CASE("shards: encoded PNG/JPEG samples are decoded from the mapping") {
  TempDir dir;
  ShardWriter writer(dir.file("enc"), ShardEncoding::Encoded, {}, kClasses, 100);
  const Bytes png = png_bytes(6, 5, 3), jpg = jpeg_bytes(6, 5, 3);
  writer.add_encoded(png.data(), png.size(), 0);
  writer.add_encoded(jpg.data(), jpg.size(), 1);
  CHECK_THROWS_WITH(writer.add_encoded(png.data(), png.size(), 2), Contains("label 2"));
  const auto files = writer.finish();
  ShardDataset set(files);
  REQUIRE(set.size() == 2);
  CHECK(set.spec().data_sizes == DimVector{3, 6, 5});
  std::uint8_t out[90];
  std::int64_t label;
  set.get(0, {out, &label, 0});
  CHECK(label == 0);
  CHECK(out[0] == pattern(0, 0, 0));
  CHECK(out[30 + 5 + 2] == pattern(1, 2, 1));  // channel 1, row 1, column 2
}

TEST_CASE("shards: damaged shards are errors naming the file and the byte offset") {
  TempDir dir;
  const auto files = write_raw(dir, 4);
  const Bytes good = read_bytes(files[0]);
  const std::string path = dir.file("bad.frs");
  auto with = [&](Bytes b) {
    write_bytes(path, b);
    return open_error(path);
  };
  CHECK(with(good) == "no error");
  CHECK_THAT(with(Bytes(good.begin(), good.begin() + 50)), Contains(path) && Contains("truncated"));
  Bytes magic = good;
  magic[0] = 'X';
  CHECK_THAT(with(magic), Contains(path) && Contains("magic"));
  Bytes version = good;
  put32(version, 8, 7);
  CHECK_THAT(with(version), Contains("version 7 is not supported") && Contains("byte offset 8"));
  Bytes header = good;
  header[30] ^= 1;  // the width, without resealing
  CHECK_THAT(with(header), Contains("header's CRC"));
  CHECK_THAT(with(Bytes(good.begin(), good.end() - 3)), Contains("truncated"));
  const std::size_t index = get64(good, 48);
  Bytes outside = good;  // entry 2's offset far past the data
  put32(outside, index + 2 * 16, 0x7fffff00u);
  reseal_index(outside);
  CHECK_THAT(with(outside), Contains(path) && Contains("index entry 2") &&
                                Contains("byte offset " + std::to_string(index + 32)) &&
                                Contains("outside"));
  Bytes label = good;
  put32(label, index + 16 + 12, 5);
  reseal_index(label);
  CHECK_THAT(with(label), Contains("index entry 1") && Contains("label 5 is out of range"));
  Bytes length = good;
  put32(length, index + 8, 19);
  reseal_index(length);
  CHECK_THAT(with(length), Contains("index entry 0") && Contains("does not match the shape"));
  Bytes crc = good;
  crc[index + 3 * 16 + 12] ^= 1;  // label 1 -> 0: in range, so only the CRC tells
  CHECK_THAT(with(crc), Contains("index's CRC"));
  CHECK_THAT(open_error(dir.file("absent.frs")), Contains("absent.frs") && Contains("cannot open"));
  // A dataset over good and bad shards names the bad one.
  write_bytes(path, magic);
  CHECK_THROWS_WITH(ShardDataset(std::vector<std::string>{files[0], path}), Contains(path));
}

TEST_CASE(
    "shards: a damaged encoded sample names the shard, the sample and its offset; skip_bad counts "
    "it") {
  TempDir dir;
  ShardWriter writer(dir.file("enc"), ShardEncoding::Encoded, {}, kClasses, 100);
  const Bytes png = png_bytes(6, 5, 1);
  for (int i = 0; i < 6; ++i) {
    if (i == 4)
      writer.add_encoded(png.data(), png.size() / 2, 0);  // stored truncated
    else
      writer.add_encoded(png.data(), png.size(), i % 2);
  }
  const auto files = writer.finish();
  auto set = std::make_shared<ShardDataset>(files);
  DataLoader strict(set, {.batch_size = 3, .shuffle = false, .num_workers = 2});
  try {
    for (Batch& b : strict) (void)b;
    FAIL("expected an error");
  } catch (const SampleError& e) {
    CHECK(e.index() == 4);
    CHECK_THAT(std::string(e.what()),
               Contains(files[0]) && Contains("sample 4 at byte offset") && Contains("truncated"));
  }
  DataLoader lenient(set, {.batch_size = 3, .shuffle = false, .num_workers = 2, .skip_bad = true});
  std::int64_t seen = 0;
  for (Batch& b : lenient) seen += b.data.size(0);
  CHECK(seen == 5);
  CHECK(lenient.skipped() == 1);
}
