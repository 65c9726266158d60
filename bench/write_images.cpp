// frugal-bench-write-images: writes the first N images of an idx data set (Fashion-MNIST by
// default) as an ImageFolder tree of PNG or JPEG files, root/<class>/<index>.png, with
// stb_image_write: the input of the loader benchmark (bench/loader.sh) and its PyTorch twin.
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/cli.h"
#include "common/error.h"
#include "common/progress.h"
#include "data/mnist.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb/stb_image_write.h>

using namespace frugal;
namespace fs = std::filesystem;

namespace {

void append(void* context, void* data, int size) {
  auto* out = static_cast<std::string*>(context);
  out->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

int run(int argc, char** argv) {
  CommandLine cli(
      "frugal-bench-write-images",
      "Writes idx images (the MNIST family) as an ImageFolder tree of PNG or JPEG files.");
  cli.option("data", "DIR", "idx files", data::kDefaultFashionMnistDir);
  cli.option("split", "NAME", "train or test", "train");
  cli.option("count", "N", "images to write (the first N)", "10000");
  cli.option("format", "EXT", "png or jpg", "png");
  cli.option("output", "DIR", "root of the tree");
  if (!cli.parse(argc, argv)) return 0;
  FRUGAL_CHECK(cli.has("output"), "--output is required");
  const std::string format = cli.get("format");
  FRUGAL_CHECK(format == "png" || format == "jpg", "--format must be png or jpg");
  const data::MnistDataset set = data::load_mnist(
      cli.get("data"), cli.get("split") == "test" ? data::Split::Test : data::Split::Train);
  const std::int64_t count = std::min<std::int64_t>(cli.get_int("count"), set.size());
  const fs::path root = cli.get("output");
  for (const char* c : data::kFashionMnistClasses) fs::create_directories(root / c);
  const int h = static_cast<int>(set.pixels.size(2)), w = static_cast<int>(set.pixels.size(3));
  const auto* pixels = set.pixels.data_ptr<std::uint8_t>();
  const auto* labels = set.labels.data_ptr<std::int64_t>();
  ProgressBar bar("write " + format, static_cast<std::uint64_t>(count));
  std::string bytes;
  for (std::int64_t i = 0; i < count; ++i) {
    bytes.clear();
    const std::uint8_t* image = pixels + i * h * w;
    const int ok = format == "png" ? stbi_write_png_to_func(append, &bytes, w, h, 1, image, w)
                                   : stbi_write_jpg_to_func(append, &bytes, w, h, 1, image, 95);
    FRUGAL_CHECK(ok, "stb_image_write failed on image " + std::to_string(i));
    char name[32];
    std::snprintf(name, sizeof name, "%05lld.%s", static_cast<long long>(i), format.c_str());
    // Plain writes: 10,000 fsyncs would take longer than the benchmark itself.
    const std::string path = (root / data::kFashionMnistClasses[labels[i]] / name).string();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    FRUGAL_CHECK(f != nullptr, "cannot create " + path);
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    FRUGAL_CHECK(std::fclose(f) == 0 && written, "cannot write " + path);
    if (i % 256 == 0) bar.update(static_cast<std::uint64_t>(i));
  }
  bar.finish();
  std::printf("wrote %lld %s images under %s\n", static_cast<long long>(count), format.c_str(),
              root.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
