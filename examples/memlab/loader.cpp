// frugal-memlab loader: the input pipeline's speed and memory. The same images as a PNG
// ImageFolder tree and as raw shards (decoded pixels, memory-mapped), read by a DataLoader
// with 0 or 2 worker threads, into pageable or pinned batch buffers: images/s, the process's
// RSS, and a check that every configuration delivers the same pixels.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#include <stb/stb_image_write.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "allocator/default_allocators.h"
#include "data/data_loader.h"
#include "data/image_folder.h"
#include "data/shard.h"
#include "data/shard_dataset.h"
#include "data/transforms.h"
#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"
#include "monitor/host_memory.h"

namespace frugal::memlab {
namespace {

namespace fs = std::filesystem;

// The first `count` test images as root/png/<label>/<i>.png and root/shards/fashion-*.frs.
void write_sources(const data::MnistDataset& set, const fs::path& root) {
  const auto* pixels = set.pixels.data_ptr<std::uint8_t>();
  const auto* labels = set.labels.data_ptr<std::int64_t>();
  std::vector<std::string> classes;
  for (int c = 0; c < 10; ++c) {
    classes.push_back(std::to_string(c));
    fs::create_directories(root / "png" / classes.back());
  }
  fs::create_directories(root / "shards");
  data::ImageShape shape{.height = 28, .width = 28, .channels = 1};
  data::ShardWriter shards((root / "shards" / "fashion").string(), data::ShardEncoding::Raw, shape,
                           classes, 512);
  for (std::int64_t i = 0; i < set.size(); ++i) {
    const std::uint8_t* image = pixels + i * 28 * 28;
    std::vector<unsigned char> bytes;
    const auto append = [](void* context, void* data, int size) {
      auto* out = static_cast<std::vector<unsigned char>*>(context);
      out->insert(out->end(), static_cast<unsigned char*>(data),
                  static_cast<unsigned char*>(data) + size);
    };
    FRUGAL_CHECK(stbi_write_png_to_func(append, &bytes, 28, 28, 1, image, 28),
                 "cannot encode PNG " + std::to_string(i));
    const fs::path path = root / "png" / std::to_string(labels[i]) / (std::to_string(i) + ".png");
    std::FILE* f = std::fopen(path.c_str(), "wb");
    FRUGAL_CHECK(f != nullptr, "cannot write " + path.string());
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    FRUGAL_CHECK(std::fclose(f) == 0 && written, "cannot write " + path.string());
    data::Image img;
    img.shape = shape;
    img.pixels = image;
    shards.add_raw(img, labels[i]);
  }
  shards.finish();
}

struct LoaderRun {
  double images_per_sec = 0;  // median over the epochs
  double pixel_sum = 0;       // of every batch of the last epoch
  std::int64_t images = 0;
  std::int64_t rss = 0;  // after the run
};

LoaderRun run_loader(std::shared_ptr<const data::Dataset> dataset, int workers, bool pinned,
                     std::int64_t batch, int epochs) {
  data::DataLoaderOptions options;
  options.batch_size = batch;
  options.num_workers = workers;
  options.pin_memory = pinned;
  data::DataLoader loader(std::move(dataset), options);
  std::vector<double> rates;
  LoaderRun r;
  for (int e = 0; e < epochs; ++e) {
    loader.set_epoch(e);
    r.images = 0;
    r.pixel_sum = 0;
    const double t0 = seconds_now();
    for (data::Batch& b : loader) {
      r.images += b.data.size(0);
      r.pixel_sum += b.data.to(kFloat64).sum().item<double>();
    }
    rates.push_back(static_cast<double>(r.images) / (seconds_now() - t0));
  }
  std::sort(rates.begin(), rates.end());
  r.images_per_sec = rates[rates.size() / 2];
  r.rss = monitor::process_memory_info().rss;
  return r;
}

}  // namespace

int loader_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "Writes the first --count Fashion-MNIST test images as a PNG ImageFolder tree and as raw\n"
      "shards into a temporary folder, then reads each with a DataLoader (ToTensor, Normalize)\n"
      "at 0 and 2 workers, pageable and pinned: images/s (median over --epochs), RSS after, and\n"
      "whether the pixels delivered match the source.");
  cli.option("count", "N", "images", "4096");
  cli.option("batch-size", "N", "images per batch", "64");
  cli.option("epochs", "N", "epochs per configuration", "3");
  cli.option("dir", "PATH",
             "where to write the images (default: a new temporary folder, removed after)");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::int64_t batch = cli.get_int("batch-size");
  const int epochs = static_cast<int>(cli.get_int("epochs"));
  FRUGAL_CHECK(batch >= 1 && epochs >= 1 && cli.get_int("count") >= 1,
               "--count, --batch-size and --epochs must be >= 1");
  const data::MnistDataset set = load_fashion(data::Split::Test, cli.get_int("count"));
  const bool temporary = !cli.has("dir");
  fs::path root =
      temporary ? fs::temp_directory_path() / ("frugal-memlab-loader-" + std::to_string(::getpid()))
                : fs::path(cli.get("dir"));
  fs::remove_all(root / "png");
  fs::remove_all(root / "shards");
  write_sources(set, root);
  // What every configuration must deliver: the normalised pixels of all the images, summed.
  const double expected = set.images(0, set.size()).to(kFloat64).sum().item<double>();
  const auto pixels = static_cast<double>(set.pixels.numel());

  data::Compose transform;
  transform.add(std::make_shared<data::ToTensor>());
  transform.add(std::make_shared<data::Normalize>(
      std::vector<float>{static_cast<float>(data::kFashionMnistMean)},
      std::vector<float>{static_cast<float>(data::kFashionMnistStd)}));
  Report report("loader", std::to_string(set.size()) + " Fashion-MNIST images, batch " +
                              std::to_string(batch) + ", ToTensor + Normalize, " +
                              std::to_string(epochs) + " epochs each");
  report.columns({"source", "workers", "pinned", "images/s", "RSS after", "same pixels as source"});
  const std::int64_t rss_start = monitor::process_memory_info().rss;
  bool all_match = true;
  try {
    for (const char* source : {"png", "shards"}) {
      std::shared_ptr<const data::Dataset> dataset;
      if (std::string(source) == "png")
        dataset = std::make_shared<data::ImageFolder>(
            (root / "png").string(),
            data::ImageFolderOptions{.channels = 1, .transform = transform});
      else
        dataset = std::make_shared<data::ShardDataset>(
            std::vector<std::string>{(root / "shards").string()},
            data::ShardDatasetOptions{.channels = 1, .transform = transform});
      for (const int workers : {0, 2})
        for (const bool pinned : {false, true}) {
          const LoaderRun r = run_loader(dataset, workers, pinned, batch, epochs);
          // The source is normalised in double, Normalize in float: the sums differ in the
          // last digits (1e-6 per pixel at most), a wrong or missing image by far more.
          const bool match =
              r.images == set.size() && std::abs(r.pixel_sum - expected) <= 1e-6 * pixels;
          all_match = all_match && match;
          JsonWriter j;
          j.field("source", source);
          j.field("workers", static_cast<std::int64_t>(workers));
          j.field("pinned", pinned);
          j.field("images_per_sec", r.images_per_sec);
          j.field("rss_bytes", r.rss);
          j.field("pixels_match", match);
          report.row({std::string(source) == "png" ? "PNG files" : "raw shards",
                      std::to_string(workers), pinned ? "yes" : "no",
                      number_text(r.images_per_sec, 0), bytes_text(r.rss), match ? "yes" : "NO"},
                     j);
        }
    }
  } catch (...) {
    if (temporary) fs::remove_all(root);
    throw;
  }
  if (temporary) fs::remove_all(root);
  report.note("RSS at the start of the table " + bytes_text(rss_start) +
              "; the Fashion-MNIST test set itself is in "
              "memory; pinned buffers come from the pinned caching allocator (mlock'd on a "
              "CPU-only machine)");
  report.note(
      "same pixels: every image once per epoch, and the sum of the normalised pixels equals the "
      "source's "
      "(within 1e-6 per pixel: float against double normalisation)");
  report.note(
      "images/s is wall clock on a shared machine: compare rows within this run only; at this size "
      "a shard "
      "epoch lasts about a millisecond, so the shard rows are mostly noise (bench/loader.sh has "
      "steadier figures)");
  report.figures().field("images", set.size());
  report.figures().field("all_pixels_match", all_match);
  report.figures().field("rss_start_bytes", rss_start);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
