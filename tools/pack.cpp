// frugal-pack: converts an ImageFolder tree or an idx data set (MNIST family) into packed
// shard files (docs/data.md): decoded pixels ("raw", read in place, fastest) or the image
// files' own bytes ("encoded", smaller, decoded when read). Damaged images stop the run with
// their file's name, or are left out and counted with --skip-bad.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/error.h"
#include "common/format.h"
#include "common/json_writer.h"
#include "common/progress.h"
#include "data/image_folder.h"
#include "data/mnist.h"
#include "data/shard.h"

using namespace frugal;
using namespace frugal::data;
namespace fs = std::filesystem;

namespace {

bool is_idx_dir(const std::string& dir) {
  for (const char* f : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz",
                        "t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz"})
    if (fs::exists(fs::path(dir) / f)) return true;
  return false;
}

struct PackResult {
  std::vector<std::string> files;
  std::uint64_t samples = 0, bytes = 0;
  std::int64_t skipped = 0;
};

PackResult pack_idx(const std::string& dir, const std::string& split, const std::string& prefix,
                    std::int64_t per_shard) {
  const MnistDataset set = load_mnist(dir, split == "test" ? Split::Test : Split::Train);
  const ImageShape shape{static_cast<int>(set.pixels.size(2)), static_cast<int>(set.pixels.size(3)),
                         1, false, ImageLayout::HWC};
  std::vector<std::string> classes;
  for (int c = 0; c < 10; ++c) classes.push_back(std::to_string(c));
  ShardWriter writer(prefix, ShardEncoding::Raw, shape, classes, per_shard);
  ProgressBar bar("pack " + split, static_cast<std::uint64_t>(set.size()));
  const auto* pixels = set.pixels.data_ptr<std::uint8_t>();
  const auto* labels = set.labels.data_ptr<std::int64_t>();
  Image image;
  for (std::int64_t i = 0; i < set.size(); ++i) {
    image.borrow(shape, pixels + static_cast<std::size_t>(i) * shape.nbytes());
    writer.add_raw(image, labels[i]);
    if (i % 1024 == 0) bar.update(static_cast<std::uint64_t>(i));
  }
  bar.finish();
  PackResult r;
  r.files = writer.finish();
  r.samples = writer.samples_written();
  r.bytes = writer.bytes_written();
  return r;
}

PackResult pack_folder(const std::string& root, const std::string& encoding, int channels,
                       const std::string& prefix, std::int64_t per_shard, bool skip_bad) {
  const ImageFolder folder(root, {.channels = channels, .skip_bad = skip_bad});
  const bool raw = encoding == "raw";
  // Raw shards hold every sample at one shape: the first image's, in the channels asked for.
  ShardWriter writer(prefix, raw ? ShardEncoding::Raw : ShardEncoding::Encoded,
                     raw ? folder.sample_shape() : ImageShape{}, folder.classes(), per_shard);
  PackResult r;
  r.skipped = folder.skipped_directories();
  ProgressBar bar("pack " + fs::path(root).filename().string(),
                  static_cast<std::uint64_t>(folder.size()));
  // Decoding runs on a team of threads, a chunk at a time; samples are written in order.
  constexpr std::int64_t kChunk = 256;
  std::vector<Image> images(kChunk);
  std::vector<std::vector<unsigned char>> bytes(kChunk);
  std::vector<std::string> errors(kChunk);
  for (std::int64_t start = 0; start < folder.size(); start += kChunk) {
    const std::int64_t n = std::min(kChunk, folder.size() - start);
#pragma omp parallel for schedule(dynamic, 8)
    for (std::int64_t k = 0; k < n; ++k) {
      errors[static_cast<std::size_t>(k)].clear();
      try {
        folder.decode(start + k,
                      images[static_cast<std::size_t>(k)]);  // checks every file, raw or not
        if (!raw)
          read_file_into(folder.path(start + k), bytes[static_cast<std::size_t>(k)]);
        else if (!(images[static_cast<std::size_t>(k)].shape == folder.sample_shape()))
          throw Error(
              folder.path(start + k) + ": image " +
              images[static_cast<std::size_t>(k)].shape.str() + " differs from the first image's " +
              folder.sample_shape().str() +
              " (raw shards hold one shape; pack --encoding encoded, or resize the images)");
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(k)] = e.what();
      }
    }
    for (std::int64_t k = 0; k < n; ++k) {
      const auto s = static_cast<std::size_t>(k);
      if (!errors[s].empty()) {
        if (!skip_bad) throw Error(errors[s]);
        std::fprintf(stderr, "frugal-pack: skipping %s\n", errors[s].c_str());
        ++r.skipped;
        continue;
      }
      if (raw)
        writer.add_raw(images[s], folder.label(start + k));
      else
        writer.add_encoded(bytes[s].data(), bytes[s].size(), folder.label(start + k));
    }
    bar.update(static_cast<std::uint64_t>(start + n));
  }
  bar.finish();
  r.files = writer.finish();
  r.samples = writer.samples_written();
  r.bytes = writer.bytes_written();
  return r;
}

int run(int argc, char** argv) {
  CommandLine cli(
      "frugal-pack",
      "Packs an ImageFolder tree (root/<class>/*.png|jpg) or an idx data set (the MNIST\n"
      "family's files) into frugal shard files (.frs, format in docs/data.md).");
  cli.option("input", "PATH", "an ImageFolder root, or a directory of idx files");
  cli.option("output", "DIR", "where the shards go (created if missing)");
  cli.option("prefix", "NAME",
             "shard file names: NAME-00000.frs ... (default: the split for idx input, else data)");
  cli.option("split", "NAME", "idx input: train or test", "train");
  cli.option("encoding", "KIND",
             "raw (decoded pixels, read in place) or encoded (the files' bytes)", "raw");
  cli.option("channels", "N", "ImageFolder: decode into 1, 3 or 4 channels (0: the first image's)",
             "0");
  cli.option("samples-per-shard", "N", "samples in each shard file", "10000");
  cli.flag("skip-bad", "leave damaged images out (logged and counted) instead of stopping");
  cli.option("json", "PATH", "write what was packed as JSON");
  if (!cli.parse(argc, argv)) return 0;
  FRUGAL_CHECK(cli.has("input") && cli.has("output"),
               "frugal-pack needs --input and --output (see --help)");
  const std::string input = cli.get("input"), output = cli.get("output"),
                    encoding = cli.get("encoding");
  const std::string split = cli.get("split");
  FRUGAL_CHECK(encoding == "raw" || encoding == "encoded",
               "--encoding must be raw or encoded, got '" + encoding + "'");
  FRUGAL_CHECK(split == "train" || split == "test",
               "--split must be train or test, got '" + split + "'");
  const std::int64_t per_shard = cli.get_int("samples-per-shard");
  FRUGAL_CHECK(per_shard >= 1, "--samples-per-shard must be at least 1");
  std::error_code ec;
  fs::create_directories(output, ec);
  FRUGAL_CHECK(!ec, "frugal-pack: cannot create " + output + ": " + ec.message());
  const bool idx = is_idx_dir(input);
  const std::string prefix = (fs::path(output) / (cli.has("prefix") ? cli.get("prefix")
                                                  : idx             ? split
                                                                    : "data"))
                                 .string();

  const auto t0 = std::chrono::steady_clock::now();
  PackResult r;
  if (idx) {
    FRUGAL_CHECK(
        encoding == "raw",
        "frugal-pack: idx files hold raw pixels only; --encoding encoded needs image files");
    r = pack_idx(input, split, prefix, per_shard);
  } else {
    r = pack_folder(input, encoding, static_cast<int>(cli.get_int("channels")), prefix, per_shard,
                    cli.has("skip-bad"));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("frugal-pack: %llu samples from %s into %zu shard%s (%s, %s) in %.2f s%s\n",
              static_cast<unsigned long long>(r.samples), input.c_str(), r.files.size(),
              r.files.size() == 1 ? "" : "s", encoding.c_str(),
              format_bytes(static_cast<std::int64_t>(r.bytes)).c_str(), seconds,
              r.skipped ? (", " + std::to_string(r.skipped) + " skipped").c_str() : "");
  if (cli.has("json")) {
    JsonWriter j;
    j.field("input", input);
    j.field("format", idx ? "idx" : "imagefolder");
    j.field("encoding", encoding);
    j.field("samples", static_cast<std::int64_t>(r.samples));
    j.field("shards", static_cast<std::int64_t>(r.files.size()));
    j.field("bytes", static_cast<std::int64_t>(r.bytes));
    j.field("skipped", r.skipped);
    j.field("seconds", seconds);
    j.write_file(cli.get("json"));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
