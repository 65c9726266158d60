// ImageFolder: classes sorted and numbered, images decoded and transformed into batches
// (the same for a seed whatever the worker count), and bad trees and files — an unreadable
// class directory, a mislabelled, truncated or odd-sized image — named in the error, or
// skipped and counted with skip_bad.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "data/data_loader.h"
#include "data/image_folder.h"
#include "engine/frugal.h"
#include "image_files.h"
#include "temp_dir.h"

using namespace frugal;
using namespace frugal::data;
using namespace frugal::test;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// root/<class>/<n>.png: 3 classes (made out of order), 4 gray 6x6 images each, pixel value
// 40 * label + n everywhere, so a batch shows which file each sample came from.
void make_tree(const TempDir& dir, int per_class = 4) {
  for (const char* name : {"zebra", "ant", "moth"}) {
    fs::create_directories(dir.path() / name);
    const int label = std::string(name) == "ant" ? 0 : std::string(name) == "moth" ? 1 : 2;
    for (int n = 0; n < per_class; ++n) {
      std::vector<std::uint8_t> pixels(36, static_cast<std::uint8_t>(40 * label + n));
      write_png((dir.path() / name / (std::to_string(n) + ".png")).string(), 6, 6, 1,
                pixels.data());
    }
  }
  write_bytes(dir.file("README.txt"), Bytes{'x'});  // a loose file beside the classes
}

}  // namespace

TEST_CASE("image folder: classes sorted, labels from directories, pixels into CHW slots") {
  TempDir dir;
  make_tree(dir);
  fs::create_directories(dir.path() / "ant" / "notes");
  write_bytes((dir.path() / "ant" / "notes.txt").string(), Bytes{'x'});
  auto set = std::make_shared<ImageFolder>(
      dir.path().string(), ImageFolderOptions{.transform = {std::make_shared<ToTensor>()}});
  CHECK(set->classes() == std::vector<std::string>{"ant", "moth", "zebra"});
  REQUIRE(set->size() == 12);
  CHECK(set->label(0) == 0);
  CHECK(set->label(11) == 2);
  CHECK(set->spec().data_sizes == DimVector{1, 6, 6});
  CHECK(set->spec().data_dtype == kFloat32);
  DataLoader loader(set, {.batch_size = 12, .shuffle = false});
  for (Batch& b : loader) {
    CHECK(b.data.sizes() == IntArrayRef{12, 1, 6, 6});
    for (std::int64_t i = 0; i < 12; ++i) {
      const std::int64_t label = b.target.data_ptr<std::int64_t>()[i];
      CHECK(label == i / 4);
      CHECK(b.data.data_ptr<float>()[i * 36 + 35] == Approx((40 * label + i % 4) / 255.0f));
    }
  }
  // Without ToTensor the samples stay uint8; channels = 3 replicates gray into RGB.
  ImageFolder rgb(dir.path().string(), {.channels = 3});
  CHECK(rgb.spec().data_sizes == DimVector{3, 6, 6});
  CHECK(rgb.spec().data_dtype == kUInt8);
}

TEST_CASE("image folder: augmented batches are identical for a seed at 0, 1 and 2 workers") {
  TempDir dir;
  make_tree(dir, 20);
  // A gradient image per class so crops and flips change the values.
  for (int n = 0; n < 20; ++n) {
    const auto pixels = pattern_image(6, 6, 3);
    std::string name = "j";  // built with += (GCC 12 warns falsely about "literal" + string)
    name += std::to_string(n);
    write_jpeg((dir.path() / "moth" / (name + ".jpg")).string(), 6, 6, 3, pixels.data());
  }
  ImageFolderOptions options;
  options.channels = 1;
  options.transform =
      Compose({std::make_shared<RandomCrop>(6, 2), std::make_shared<RandomHorizontalFlip>(),
               std::make_shared<ToTensor>(),
               std::make_shared<Normalize>(std::vector<float>{0.5f}, std::vector<float>{0.25f})});
  auto set = std::make_shared<ImageFolder>(dir.path().string(), options);
  REQUIRE(set->size() == 80);
  std::vector<float> reference;
  for (int workers : {0, 1, 2}) {
    DataLoader loader(set, {.batch_size = 7, .shuffle = true, .seed = 11, .num_workers = workers});
    loader.set_epoch(1);
    std::vector<float> all;
    for (Batch& b : loader)
      all.insert(all.end(), b.data.data_ptr<float>(), b.data.data_ptr<float>() + b.data.numel());
    REQUIRE(all.size() == 80 * 36);
    if (reference.empty()) reference = all;
    CHECK(all == reference);
  }
}

TEST_CASE("image folder: bad trees are errors naming the directory") {
  TempDir dir;
  CHECK_THROWS_WITH(ImageFolder(dir.file("nowhere")),
                    Contains(dir.file("nowhere")) && Contains("not a directory"));
  CHECK_THROWS_WITH(ImageFolder(dir.path().string()), Contains("no class directories"));
  fs::create_directories(dir.path() / "empty-class");
  CHECK_THROWS_WITH(ImageFolder(dir.path().string()), Contains("no images"));
  make_tree(dir);
  // A class directory that cannot be listed: a dangling link (root reads any mode), and,
  // when not root, a directory without read permission.
  fs::create_directory_symlink(dir.path() / "gone", dir.path() / "lost");
  CHECK_THROWS_WITH(ImageFolder(dir.path().string()), Contains((dir.path() / "lost").string()));
  ImageFolder skipping(dir.path().string(), {.skip_bad = true});
  CHECK(skipping.skipped_directories() == 1);
  CHECK(skipping.size() == 12);
  fs::remove(dir.path() / "lost");
  if (::geteuid() != 0) {
    fs::create_directories(dir.path() / "locked");
    fs::permissions(dir.path() / "locked", fs::perms::none);
    CHECK_THROWS_WITH(ImageFolder(dir.path().string()), Contains((dir.path() / "locked").string()));
    fs::permissions(dir.path() / "locked", fs::perms::owner_all);
  }
}

TEST_CASE(
    "image folder: damaged, mislabelled and odd-sized images name their file; skip_bad counts "
    "them") {
  TempDir dir;
  make_tree(dir);
  const std::string truncated = (dir.path() / "ant" / "9.png").string();
  const Bytes png = png_bytes(6, 6, 1);
  write_bytes(truncated, Bytes(png.begin(), png.begin() + 40));
  const std::string mislabelled = (dir.path() / "moth" / "9.png").string();
  write_bytes(mislabelled, jpeg_bytes(6, 6, 1));  // JPEG bytes under a .png name
  const std::string not_image = (dir.path() / "moth" / "8.jpg").string();
  write_bytes(not_image, Bytes{'<', 'h', 't', 'm', 'l', '>'});
  const std::string odd = (dir.path() / "zebra" / "9.png").string();
  const auto big = pattern_image(8, 8, 1);
  write_png(odd, 8, 8, 1, big.data());

  auto set = std::make_shared<ImageFolder>(dir.path().string());
  REQUIRE(set->size() == 16);
  auto error_of = [&](const std::string& path) {
    for (std::int64_t i = 0; i < set->size(); ++i)
      if (set->path(i) == path) {
        std::uint8_t data[36];
        std::int64_t target;
        try {
          set->get(i, {data, &target, 0});
        } catch (const Error& e) {
          return std::string(e.what());
        }
      }
    return std::string("no error");
  };
  CHECK_THAT(error_of(truncated),
             Contains(truncated) && Contains("truncated") && Contains("byte offset"));
  CHECK_THAT(error_of(mislabelled),
             Contains(mislabelled) && Contains("named as PNG but its bytes are JPEG"));
  CHECK_THAT(error_of(not_image), Contains(not_image) && Contains("not a PNG or JPEG"));
  CHECK_THAT(error_of(odd), Contains(odd) && Contains("8x8x1") && Contains("6x6x1"));

  DataLoader strict(set, {.batch_size = 4, .shuffle = false, .num_workers = 2});
  CHECK_THROWS_AS(
      [&] {
        for (Batch& b : strict) (void)b;
      }(),
      SampleError);
  DataLoader lenient(set, {.batch_size = 4, .shuffle = true, .num_workers = 2, .skip_bad = true});
  std::int64_t samples = 0;
  for (Batch& b : lenient) samples += b.data.size(0);
  CHECK(lenient.skipped() == 4);
  CHECK(samples == 12);
}

TEST_CASE("image folder: skip_bad leaves out damage the scan meets; a loader names each bad file once") {
  TempDir dir;
  make_tree(dir);
  // "0-..." sorts first in ant/, the first class: the scan decodes it for the sample shape.
  const std::string first = (dir.path() / "ant" / "0-cut.png").string();
  const Bytes png = png_bytes(6, 6, 1);
  write_bytes(first, Bytes(png.begin(), png.begin() + 30));
  CHECK_THROWS_WITH(ImageFolder(dir.path().string()), Contains(first) && Contains("truncated"));
  const auto set = std::make_shared<ImageFolder>(dir.path().string(),
                                                 ImageFolderOptions{.channels = 1, .skip_bad = true});
  REQUIRE(set->scan_skipped().size() == 1);
  CHECK(set->scan_skipped()[0].path == first);
  CHECK_THAT(set->scan_skipped()[0].reason, Contains("byte offset"));
  CHECK(set->size() == 12);  // left out of the listing: not met, or counted, again
  for (std::int64_t i = 0; i < set->size(); ++i) CHECK(set->path(i) != first);

  // A bad file met in every epoch: counted each time, named once.
  const std::string bad = (dir.path() / "moth" / "x.png").string();
  write_bytes(bad, Bytes{'n', 'o'});
  const auto with_bad = std::make_shared<ImageFolder>(dir.path().string(),
                                                      ImageFolderOptions{.channels = 1, .skip_bad = true});
  DataLoader loader(with_bad, {.batch_size = 5, .shuffle = true, .num_workers = 2, .skip_bad = true});
  for (int epoch = 0; epoch < 3; ++epoch) {
    loader.set_epoch(epoch);
    for (Batch& b : loader) (void)b;
  }
  CHECK(loader.skipped() == 3);
  const auto indices = loader.skipped_indices();
  REQUIRE(indices.size() == 1);
  CHECK(with_bad->source(indices[0]) == bad);
}

TEST_CASE("image folder: views share one listing; probe says the channels and sizes to expect") {
  TempDir dir;
  make_tree(dir);
  const ImageFolder gray(dir.path().string());
  CHECK(gray.probe().channels == 1);
  CHECK(gray.probe().size_mismatch.empty());
  const auto rgb = gray.with_transform(Compose({std::make_shared<ToTensor>()}), 3);
  CHECK(rgb->size() == gray.size());
  CHECK(rgb->spec().data_sizes == DimVector{3, 6, 6});
  std::vector<float> sample(3 * 36);
  std::int64_t label = -1;
  rgb->get(5, {sample.data(), &label, 0});
  CHECK(label == gray.label(5));
  CHECK(sample[0] == sample[36]);  // gray replicated to R, G and B
  CHECK(sample[36] == sample[72]);
  // One colour image of another size among the gray ones.
  const auto colour = pattern_image(9, 5, 3);
  write_png((dir.path() / "moth" / "c.png").string(), 9, 5, 3, colour.data());
  const ImageFolder mixed(dir.path().string(), {.channels = 1});
  const ImageFolder::Probe p = mixed.probe(100);
  CHECK(p.channels == 3);
  CHECK_THAT(p.size_mismatch, Contains("is 6x6 but") && Contains("c.png is 9x5"));
}
