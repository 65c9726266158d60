// frugal-train's data sources: the idx files in an InMemoryLoader (the original path), or any
// Dataset (idx in memory, ImageFolder, shards) behind a DataLoader.
#include "examples/train/data_source.h"

#include <filesystem>

#include "common/error.h"
#include "data/data_loader.h"
#include "data/image_folder.h"
#include "data/mnist.h"
#include "data/shard_dataset.h"
#include "data/tensor_image_dataset.h"

namespace fs = std::filesystem;

namespace frugal::train {

namespace {

bool is_idx_dir(const fs::path& dir) {
  for (const char* f : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"})
    if (fs::exists(dir / f)) return true;
  return false;
}

std::vector<std::string> shards_with_prefix(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->path().extension() == ".frs" && name.rfind(prefix + "-", 0) == 0)
      files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool holds_shards(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().extension() == ".frs") return true;
  return false;
}

// What every image source does to a decoded image: to [0, 1], then Fashion-MNIST's mean/std.
data::Compose normalise() {
  return data::Compose({std::make_shared<data::ToTensor>(),
                        std::make_shared<data::Normalize>(
                            std::vector<float>{static_cast<float>(data::kFashionMnistMean)},
                            std::vector<float>{static_cast<float>(data::kFashionMnistStd)})});
}

// The original path: the idx data set in memory, batches gathered and normalised on the
// caller's thread.
class InMemorySource : public DataSource {
 public:
  InMemorySource(const DataSourceOptions& options)
      : train_(data::load_mnist(options.path, data::Split::Train)),
        test_(data::load_mnist(options.path, data::Split::Test)),
        loader_(train_.pixels, train_.labels,
                {.batch_size = options.batch_size,
                 .shuffle = true,
                 .seed = options.seed,
                 .transform = [this](const Tensor& pixels) { return train_.normalize(pixels); }}) {}
  std::string kind() const override { return "idx"; }
  std::int64_t train_size() const override { return train_.size(); }
  std::int64_t test_size() const override { return test_.size(); }
  void set_epoch(std::int64_t epoch) override { loader_.set_epoch(epoch); }
  std::int64_t num_batches() const override { return loader_.num_batches(); }
  data::Batch batch(std::int64_t index) override { return loader_.batch(index); }
  void for_each_test_batch(std::int64_t batch_size,
                           const std::function<void(const data::Batch&)>& fn) override {
    for (std::int64_t start = 0; start < test_.size(); start += batch_size) {
      const std::int64_t n = std::min(batch_size, test_.size() - start);
      fn({test_.images(start, n), test_.labels.narrow(0, start, n)});
    }
  }

 private:
  data::MnistDataset train_, test_;
  data::InMemoryLoader loader_;
};

// Any Dataset pair behind DataLoaders: workers, prefetch, pinned batches, skip-bad.
class LoaderSource : public DataSource {
 public:
  LoaderSource(std::string kind, std::shared_ptr<const data::Dataset> train,
               std::shared_ptr<const data::Dataset> test, const DataSourceOptions& options)
      : kind_(std::move(kind)),
        test_set_(test),
        options_(options),
        train_(train, {.batch_size = options.batch_size,
                       .shuffle = true,
                       .seed = options.seed,
                       .num_workers = options.workers,
                       .prefetch = options.prefetch,
                       .pin_memory = options.pin_memory,
                       .persistent_workers = true,
                       .skip_bad = options.skip_bad}) {}
  std::string kind() const override { return kind_; }
  std::int64_t train_size() const override { return train_.dataset().size(); }
  std::int64_t test_size() const override { return test_set_->size(); }
  void set_epoch(std::int64_t epoch) override {
    epoch_.reset();  // stops and joins the previous epoch's workers
    train_.set_epoch(epoch);
  }
  std::int64_t num_batches() const override { return train_.num_batches(); }
  data::Batch batch(std::int64_t index) override {
    if (!epoch_ || epoch_->next_index() != index) {
      epoch_.reset();  // the workers finish with the old position before starting the new one
      epoch_ = train_.start(index);
    }
    std::optional<data::Batch> b = epoch_->next();
    FRUGAL_CHECK(b.has_value(), "frugal-train: every sample from batch " + std::to_string(index) +
                                    " to the end of the epoch was skipped as bad");
    return std::move(*b);
  }
  void for_each_test_batch(std::int64_t batch_size,
                           const std::function<void(const data::Batch&)>& fn) override {
    data::DataLoader test(test_set_, {.batch_size = batch_size,
                                      .shuffle = false,
                                      .num_workers = options_.workers,
                                      .prefetch = options_.prefetch,
                                      .pin_memory = options_.pin_memory,
                                      .skip_bad = options_.skip_bad});
    for (data::Batch& b : test) fn(b);
    test_skipped_ += test.skipped();
  }
  std::int64_t skipped() const override { return train_.skipped() + test_skipped_; }

 private:
  std::string kind_;
  std::shared_ptr<const data::Dataset> test_set_;
  DataSourceOptions options_;
  data::DataLoader train_;
  std::unique_ptr<data::LoaderEpoch> epoch_;
  std::int64_t test_skipped_ = 0;
};

std::shared_ptr<const data::Dataset> open_split(const fs::path& dir,
                                                const std::vector<std::string>& shard_files,
                                                bool skip_bad, std::string& kind) {
  if (!shard_files.empty() || holds_shards(dir)) {
    kind = "shards";
    return std::make_shared<data::ShardDataset>(
        shard_files.empty() ? std::vector<std::string>{dir.string()} : shard_files,
        data::ShardDatasetOptions{.channels = 1, .transform = normalise()});
  }
  kind = "imagefolder";
  return std::make_shared<data::ImageFolder>(
      dir.string(),
      data::ImageFolderOptions{.channels = 1, .transform = normalise(), .skip_bad = skip_bad});
}

}  // namespace

std::unique_ptr<DataSource> DataSource::open(const DataSourceOptions& options) {
  const fs::path dir = options.path;
  std::error_code ec;
  FRUGAL_CHECK(fs::is_directory(dir, ec), "--data " + options.path + " is not a directory");
  if (is_idx_dir(dir)) {
    if (options.workers == 0 && !options.pin_memory)
      return std::make_unique<InMemorySource>(options);
    const data::MnistDataset train = data::load_mnist(options.path, data::Split::Train);
    const data::MnistDataset test = data::load_mnist(options.path, data::Split::Test);
    return std::make_unique<LoaderSource>(
        "idx", std::make_shared<data::TensorImageDataset>(train.pixels, train.labels, normalise()),
        std::make_shared<data::TensorImageDataset>(test.pixels, test.labels, normalise()), options);
  }
  std::string kind, test_kind;
  if (fs::is_directory(dir / "train", ec)) {
    const fs::path test_dir = fs::is_directory(dir / "test", ec) ? dir / "test" : dir / "val";
    FRUGAL_CHECK(fs::is_directory(test_dir, ec),
                 "--data " + options.path + " has train/ but no test/ (or val/) beside it");
    auto train = open_split(dir / "train", {}, options.skip_bad, kind);
    auto test = open_split(test_dir, {}, options.skip_bad, test_kind);
    return std::make_unique<LoaderSource>(kind, train, test, options);
  }
  const auto train_shards = shards_with_prefix(dir, "train"),
             test_shards = shards_with_prefix(dir, "test");
  if (!train_shards.empty()) {
    FRUGAL_CHECK(!test_shards.empty(),
                 "--data " + options.path + " has train-*.frs shards but no test-*.frs");
    auto train = open_split(dir, train_shards, options.skip_bad, kind);
    auto test = open_split(dir, test_shards, options.skip_bad, test_kind);
    return std::make_unique<LoaderSource>(kind, train, test, options);
  }
  throw Error("--data " + options.path +
              " holds neither idx files (train-images-idx3-ubyte[.gz]), nor train/ and test/ "
              "directories (ImageFolder "
              "trees or shards), nor train-*.frs and test-*.frs shards");
}

}  // namespace frugal::train
