// frugal-loader-bench: images/s of a DataLoader configuration over an ImageFolder tree or
// packed shards, epoch by epoch, with the process's peak resident memory after each epoch —
// so a run of many epochs shows whether the loader's memory stays flat. --json for scripts.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "common/cli.h"
#include "common/error.h"
#include "common/format.h"
#include "common/json_writer.h"
#include "common/progress.h"
#include "data/data_loader.h"
#include "data/image_folder.h"
#include "data/mnist.h"
#include "data/shard_dataset.h"

using namespace frugal;
using namespace frugal::data;
namespace fs = std::filesystem;

namespace {

// VmHWM (peak) or VmRSS (now) of this process, in bytes.
std::int64_t proc_status_bytes(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string k = std::string(key) + ":";
  while (std::getline(status, line))
    if (line.rfind(k, 0) == 0) return std::stoll(line.substr(k.size())) * 1024;
  return -1;
}

bool is_shards(const std::string& path) {
  std::error_code ec;
  FRUGAL_CHECK(fs::exists(path, ec), "--data " + path + " does not exist");
  if (fs::is_regular_file(path)) return fs::path(path).extension() == ".frs";
  for (const auto& e : fs::directory_iterator(path))
    if (e.path().extension() == ".frs") return true;
  return false;
}

std::vector<float> parse_floats(const std::string& text) {
  std::vector<float> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    out.push_back(std::stof(text.substr(pos, comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

int run(int argc, char** argv) {
  CommandLine cli(
      "frugal-loader-bench",
      "Images/s of a DataLoader over an ImageFolder tree or packed shards (random crop\n"
      "with padding, horizontal flip, to-tensor, normalize), and the process's peak RSS\n"
      "after each epoch.");
  cli.option("data", "PATH", "an ImageFolder root, or .frs shards (a file or a directory of them)");
  cli.option("workers", "N", "worker threads (0: batches made on the consuming thread)", "0");
  cli.option("batch-size", "N", "samples per batch", "128");
  cli.option("epochs", "N", "epochs to run", "3");
  cli.option("prefetch", "N", "batches in flight at most", "2");
  cli.option("channels", "N", "decode into this many channels (0: as stored)", "1");
  cli.option("crop", "N", "random crop size (0: no crop)", "28");
  cli.option("pad", "N", "zero padding around the image before the crop", "2");
  cli.option("mean", "M[,M...]", "Normalize's mean per channel", "0.2860");
  cli.option("std", "S[,S...]", "Normalize's std per channel", "0.3530");
  cli.option("seed", "N", "shuffle and augmentation seed", "0");
  cli.flag("no-flip", "leave out the random horizontal flip");
  cli.flag("pin-memory", "batch buffers from the pinned allocator");
  cli.flag("persistent-workers", "keep the worker threads from one epoch to the next");
  cli.flag("shard-shuffle",
           "shards: shuffle shard order and within shards (default: a global shuffle)");
  cli.option("json", "PATH", "write the figures as JSON");
  if (!cli.parse(argc, argv)) return 0;
  FRUGAL_CHECK(cli.has("data"), "--data is required (see --help)");
  const std::string path = cli.get("data");
  const std::int64_t epochs = cli.get_int("epochs");
  FRUGAL_CHECK(epochs >= 1, "--epochs must be at least 1");

  Compose transform;
  if (cli.get_int("crop") > 0)
    transform.add(std::make_shared<RandomCrop>(static_cast<int>(cli.get_int("crop")),
                                               static_cast<int>(cli.get_int("pad"))));
  if (!cli.has("no-flip")) transform.add(std::make_shared<RandomHorizontalFlip>());
  transform.add(std::make_shared<ToTensor>());
  transform.add(
      std::make_shared<Normalize>(parse_floats(cli.get("mean")), parse_floats(cli.get("std"))));

  const bool shards = is_shards(path);
  const int channels = static_cast<int>(cli.get_int("channels"));
  std::shared_ptr<const Dataset> dataset;
  std::shared_ptr<const Sampler> sampler;
  const auto seed = static_cast<std::uint64_t>(cli.get_int("seed"));
  if (shards) {
    auto set = std::make_shared<ShardDataset>(
        std::vector<std::string>{path},
        ShardDatasetOptions{.channels = channels, .transform = transform});
    if (cli.has("shard-shuffle"))
      sampler = std::make_shared<ShardShuffleSampler>(set->group_sizes(), seed);
    dataset = set;
  } else {
    dataset = std::make_shared<ImageFolder>(
        path, ImageFolderOptions{.channels = channels, .transform = transform});
  }
  if (!sampler) sampler = std::make_shared<RandomSampler>(dataset->size(), seed);
  DataLoaderOptions options;
  options.batch_size = cli.get_int("batch-size");
  options.seed = seed;
  options.num_workers = static_cast<int>(cli.get_int("workers"));
  options.prefetch = static_cast<int>(cli.get_int("prefetch"));
  options.pin_memory = cli.has("pin-memory");
  options.persistent_workers = cli.has("persistent-workers");
  DataLoader loader(dataset, sampler, options);

  std::printf("frugal-loader-bench: %s (%s), %lld samples, batch %lld, %d workers, %s\n",
              path.c_str(), shards ? "shards" : "ImageFolder",
              static_cast<long long>(dataset->size()), static_cast<long long>(options.batch_size),
              options.num_workers, transform.str().c_str());
  std::vector<double> rates;
  std::vector<std::int64_t> peaks;
  double checksum = 0;  // the consumer reads one value per batch, so nothing is optimised away
  for (std::int64_t e = 0; e < epochs; ++e) {
    loader.set_epoch(e);
    ProgressBar bar("epoch " + std::to_string(e + 1),
                    static_cast<std::uint64_t>(loader.num_batches()));
    std::int64_t images = 0, batches = 0;
    const double t0 = bench::now_ns();
    for (Batch& b : loader) {
      images += b.data.size(0);
      checksum += static_cast<double>(b.data.data_ptr<float>()[0]);
      bar.update(static_cast<std::uint64_t>(++batches));
    }
    const double seconds = (bench::now_ns() - t0) * 1e-9;
    bar.finish();
    rates.push_back(static_cast<double>(images) / seconds);
    peaks.push_back(proc_status_bytes("VmHWM"));
    std::printf("epoch %lld: %lld images in %.3f s, %.0f images/s, peak RSS %s\n",
                static_cast<long long>(e + 1), static_cast<long long>(images), seconds,
                rates.back(), format_bytes(peaks.back()).c_str());
  }
  const double median = bench::median(rates);
  const double growth = 100.0 * static_cast<double>(peaks.back() - peaks.front()) /
                        static_cast<double>(peaks.front());
  std::printf(
      "median %.0f images/s; peak RSS after epoch 1 %s, after epoch %lld %s (%+.2f%%); checksum "
      "%g\n",
      median, format_bytes(peaks.front()).c_str(), static_cast<long long>(epochs),
      format_bytes(peaks.back()).c_str(), growth, checksum);
  if (cli.has("json")) {
    JsonWriter j;
    j.field("data", path);
    j.field("source", shards ? "shards" : "imagefolder");
    j.field("samples", dataset->size());
    j.field("batch_size", options.batch_size);
    j.field("workers", static_cast<std::int64_t>(options.num_workers));
    j.field("prefetch", static_cast<std::int64_t>(options.prefetch));
    j.field("pin_memory", options.pin_memory);
    j.field("persistent_workers", options.persistent_workers);
    j.field("epochs", epochs);
    j.field("images_per_sec", median);
    std::vector<std::string> per_epoch;
    for (std::size_t i = 0; i < rates.size(); ++i) {
      JsonWriter e;
      e.field("epoch", static_cast<std::int64_t>(i + 1));
      e.field("images_per_sec", rates[i]);
      e.field("peak_rss_bytes", peaks[i]);
      per_epoch.push_back(e.str());
    }
    j.raw("per_epoch", JsonWriter::array(per_epoch));
    j.field("peak_rss_after_epoch1_bytes", peaks.front());
    j.field("peak_rss_bytes", peaks.back());
    j.field("peak_rss_growth_percent", growth);
    j.write_file(cli.get("json"));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
