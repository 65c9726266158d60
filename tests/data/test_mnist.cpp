// load_mnist on a small synthetic pair of idx files (plain and gzip), its errors, and, where
// Debian's dataset-fashion-mnist package is installed, on the real Fashion-MNIST.
#include <catch2/catch.hpp>

#include <filesystem>

#include "data/mnist.h"
#include "engine/frugal.h"
#include "temp_dir.h"

using namespace frugal;
using namespace frugal::data;
using Catch::Matchers::Contains;
using test::Bytes;

namespace {

Bytes images_file(std::uint32_t n, std::uint32_t h, std::uint32_t w) {
  Bytes b = {0, 0, 8, 3};
  for (std::uint32_t d : {n, h, w})
    for (int i = 3; i >= 0; --i) b.push_back(static_cast<std::uint8_t>(d >> (8 * i)));
  for (std::uint32_t i = 0; i < n * h * w; ++i) b.push_back(static_cast<std::uint8_t>(i % 256));
  return b;
}

Bytes labels_file(std::uint32_t n) {
  Bytes b = {0, 0, 8, 1};
  for (int i = 3; i >= 0; --i) b.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  for (std::uint32_t i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(i % 10));
  return b;
}

}  // namespace

TEST_CASE(
    "mnist: a synthetic split loads as uint8 pixels, normalised per batch, and int64 labels") {
  test::TempDir dir;
  test::write_bytes(dir.file("train-images-idx3-ubyte"), images_file(5, 4, 3));
  test::write_gzip(dir.file("train-labels-idx1-ubyte.gz"), labels_file(5));
  test::write_gzip(dir.file("t10k-images-idx3-ubyte.gz"), images_file(2, 28, 28));
  test::write_bytes(dir.file("t10k-labels-idx1-ubyte"), labels_file(2));

  MnistDataset train = load_mnist(dir.path().string(), Split::Train, 0.5, 0.25);
  CHECK(train.size() == 5);
  REQUIRE(train.pixels.dtype() == kUInt8);  // stored compactly
  CHECK(train.pixels.sizes() == IntArrayRef{5, 1, 4, 3});
  const Tensor all = train.images(0, 5);
  REQUIRE(all.dtype() == kFloat32);
  CHECK(all.sizes() == IntArrayRef{5, 1, 4, 3});
  REQUIRE(train.labels.dtype() == kInt64);
  CHECK(train.labels.sizes() == IntArrayRef{5});
  CHECK(train.labels[3].item<std::int64_t>() == 3);
  const float* px = all.data_ptr<float>();
  for (int i : {0, 1, 30, 59}) CHECK(px[i] == Approx((i % 256 / 255.0 - 0.5) / 0.25).epsilon(1e-6));
  CHECK(train.images(2, 1).data_ptr<float>()[0] == px[24]);

  MnistDataset test_split = load_mnist(dir.path().string(), Split::Test);
  CHECK(test_split.pixels.sizes() == IntArrayRef{2, 1, 28, 28});
  CHECK(test_split.images(0, 1).data_ptr<float>()[0] ==
        Approx(-kFashionMnistMean / kFashionMnistStd));
  CHECK_THROWS_WITH(train.normalize(ones({2})), Contains("uint8"));
}

TEST_CASE("mnist: missing files, wrong types and mismatched counts are refused by name") {
  test::TempDir dir;
  const std::string d = dir.path().string();
  CHECK_THROWS_WITH(load_mnist(d, Split::Train),
                    Contains("train-images-idx3-ubyte.gz") && Contains("exists"));
  CHECK_THROWS_WITH(load_mnist(d + "/nowhere", Split::Test), Contains("no directory"));

  test::write_bytes(dir.file("train-images-idx3-ubyte"), images_file(5, 4, 4));
  test::write_bytes(dir.file("train-labels-idx1-ubyte"), labels_file(4));
  CHECK_THROWS_WITH(load_mnist(d, Split::Train),
                    Contains("train-images-idx3-ubyte holds 5 images") &&
                        Contains("train-labels-idx1-ubyte holds 4 labels"));
  // Labels where images belong.
  test::write_bytes(dir.file("train-images-idx3-ubyte"), labels_file(4));
  CHECK_THROWS_WITH(load_mnist(d, Split::Train),
                    Contains("expected uint8 images [N, H, W], found uint8 [4]"));
  test::write_bytes(dir.file("train-images-idx3-ubyte"), images_file(4, 2, 2));
  test::write_bytes(dir.file("train-labels-idx1-ubyte"), images_file(4, 2, 2));
  CHECK_THROWS_WITH(load_mnist(d, Split::Train),
                    Contains("train-labels-idx1-ubyte: expected uint8 labels [N]"));
  CHECK_THROWS_WITH(load_mnist(d, Split::Train, 0.0, 0.0), Contains("positive std"));
}

TEST_CASE("mnist: the real Fashion-MNIST, where the Debian package is installed") {
  if (!std::filesystem::exists(kDefaultFashionMnistDir)) {
    WARN(std::string(kDefaultFashionMnistDir) +
         " is missing (package dataset-fashion-mnist): check skipped");
    return;
  }
  MnistDataset test_split = load_mnist(kDefaultFashionMnistDir, Split::Test);
  CHECK(test_split.size() == 10000);
  CHECK(test_split.pixels.sizes() == IntArrayRef{10000, 1, 28, 28});
  CHECK(test_split.labels.min().item<std::int64_t>() == 0);
  CHECK(test_split.labels.max().item<std::int64_t>() == 9);
  MnistDataset train = load_mnist(kDefaultFashionMnistDir, Split::Train);
  CHECK(train.size() == 60000);
  CHECK(train.pixels.sizes() == IntArrayRef{60000, 1, 28, 28});
  CHECK(train.labels.min().item<std::int64_t>() == 0);
  CHECK(train.labels.max().item<std::int64_t>() == 9);
  // Normalised with the training set's own statistics, the pixels have mean 0 and std 1.
  CHECK(std::abs(train.images(0, train.size()).mean().item<float>()) < 0.01);
  // Every class holds 6000 training images.
  std::vector<std::int64_t> counts(10);
  const std::int64_t* l = train.labels.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < train.size(); ++i) ++counts[l[i]];
  CHECK(counts == std::vector<std::int64_t>(10, 6000));
}
