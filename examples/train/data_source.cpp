// frugal-train's data sources: the idx files in an InMemoryLoader (the original path), or any
// Dataset (idx in memory, ImageFolder views, a held-out Subset, shards) behind DataLoaders,
// with the channels the data needs and the transforms of examples/train/data_transforms.h.
#include "examples/train/data_source.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "data/data_loader.h"
#include "data/image_folder.h"
#include "data/mnist.h"
#include "data/shard_dataset.h"
#include "data/subset.h"
#include "data/tensor_image_dataset.h"
#include "examples/train/data_transforms.h"

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

bool has_subdirectory(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().rfind('.', 0) != 0 && it->is_directory(ec)) return true;
  return false;
}

// The original path: the idx data set in memory, batches gathered and normalised on the
// caller's thread.
class InMemorySource : public DataSource {
 public:
  InMemorySource(data::MnistDataset train, data::MnistDataset test,
                 const DataSourceOptions& options)
      : train_(std::move(train)),
        test_(std::move(test)),
        loader_(train_.pixels, train_.labels,
                {.batch_size = options.batch_size,
                 .shuffle = true,
                 .seed = options.seed,
                 .transform = [this](const Tensor& pixels) { return train_.normalize(pixels); }}) {}
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
  LoaderSource(std::shared_ptr<const data::Dataset> train,
               std::shared_ptr<const data::Dataset> test, const DataSourceOptions& options,
               std::vector<std::string> scan_skipped)
      : test_set_(test),
        options_(options),
        train_(train, {.batch_size = options.batch_size,
                       .shuffle = true,
                       .seed = options.seed,
                       .num_workers = options.workers,
                       .prefetch = options.prefetch,
                       .pin_memory = options.pin_memory,
                       .persistent_workers = true,
                       .skip_bad = options.skip_bad}),
        skipped_(scan_skipped.begin(), scan_skipped.end()) {}
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
    // One loader for every evaluation, so a bad file is named once, not once per epoch.
    if (!test_ || test_->options().batch_size != batch_size) {
      if (test_) note_skipped(*test_);
      test_ = std::make_unique<data::DataLoader>(
          test_set_, data::DataLoaderOptions{.batch_size = batch_size,
                                             .shuffle = false,
                                             .num_workers = options_.workers,
                                             .prefetch = options_.prefetch,
                                             .pin_memory = options_.pin_memory,
                                             .skip_bad = options_.skip_bad});
    }
    for (data::Batch& b : *test_) fn(b);
  }
  std::vector<std::string> skipped_files() const override {
    std::set<std::string> all = skipped_;
    for (const data::DataLoader* loader :
         {&train_, static_cast<const data::DataLoader*>(test_.get())})
      if (loader)
        for (std::int64_t i : loader->skipped_indices()) all.insert(loader->dataset().source(i));
    return {all.begin(), all.end()};
  }

 private:
  std::shared_ptr<const data::Dataset> test_set_;
  DataSourceOptions options_;
  data::DataLoader train_;
  void note_skipped(const data::DataLoader& loader) {
    for (std::int64_t i : loader.skipped_indices()) skipped_.insert(loader.dataset().source(i));
  }

  std::unique_ptr<data::LoaderEpoch> epoch_;
  std::unique_ptr<data::DataLoader> test_;
  std::set<std::string> skipped_;  // found by the scan, or by a test loader no longer kept
};

void check_options(const DataSourceOptions& o) {
  if (o.channels != 0 && o.channels != 1 && o.channels != 3)
    throw ConfigError("--channels must be 1 or 3, got " + std::to_string(o.channels));
  if (o.image_size < 0 || o.image_size > 4096)
    throw ConfigError("--image-size must be between 1 and 4096, got " +
                      std::to_string(o.image_size));
  if (!(o.val_fraction > 0 && o.val_fraction < 1))
    throw ConfigError("--val-fraction must lie strictly between 0 and 1, got " +
                      std::to_string(o.val_fraction));
}

// The channels of a tree's samples (as given, or 3 when any image holds colour); a tree of
// images of different sizes needs --image-size, said before anything is trained.
int probe_tree(const data::ImageFolder& tree, const DataSourceOptions& options) {
  const data::ImageFolder::Probe p = tree.probe();
  if (options.image_size == 0 && !p.size_mismatch.empty())
    throw ConfigError("--data " + options.path + ": the images differ in size (" + p.size_mismatch +
                      "); give --image-size N to resize and crop them to N x N");
  return options.channels ? options.channels : p.channels;
}

// The training and evaluation views of image data once its channels are known: `make` opens
// a view with a transform (an ImageFolder view, a ShardDataset, a tensor data set).
using MakeView = std::function<std::shared_ptr<const data::Dataset>(const data::Compose&)>;

struct Views {
  std::shared_ptr<const data::Dataset> train, eval;
};

Views make_views(const MakeView& make_train, const MakeView& make_eval,
                 const DataSourceOptions& options, DataInfo& info) {
  info.augment = resolve_augment(options.augment, options.image_size);
  Normalization n;
  if (!options.normalize.empty()) {
    n = parse_normalize(options.normalize, info.channels);
  } else {
    const auto plain = make_train(to_model(eval_steps(options.image_size), {}));
    n = measure_normalization(*plain, options.skip_bad, 500);
  }
  const data::Compose train_t = to_model(train_steps(options.image_size, info.augment), n);
  const data::Compose eval_t = to_model(eval_steps(options.image_size), n);
  Views v{make_train(train_t), make_eval(eval_t)};
  info.train_transform = train_t.str();
  info.eval_transform = eval_t.str();
  info.mean = n.mean;
  info.std = n.std;
  info.normalize_from = n.from;
  const data::SampleSpec spec = v.train->spec();
  info.channels = spec.data_sizes[0];
  info.height = spec.data_sizes[1];
  info.width = spec.data_sizes[2];
  return v;
}

std::unique_ptr<DataSource> open_idx(const DataSourceOptions& options, DataInfo& info) {
  if (options.channels == 3)
    throw ConfigError("--channels 3: the idx files at " + options.path +
                      " hold gray images; write them as an image folder to train on 3 channels");
  data::MnistDataset train = data::load_mnist(options.path, data::Split::Train);
  data::MnistDataset test = data::load_mnist(options.path, data::Split::Test);
  info.kind = "idx";
  info.split = "idx";
  for (const char* c : data::kFashionMnistClasses) info.classes.push_back(c);
  info.augment = resolve_augment(options.augment, options.image_size);
  const Normalization n =
      options.normalize.empty() ? measure_idx(train) : parse_normalize(options.normalize, 1);
  info.mean = n.mean;
  info.std = n.std;
  info.normalize_from = n.from;
  if (options.image_size) info.height = info.width = options.image_size;
  if (options.workers == 0 && !options.pin_memory && options.image_size == 0 &&
      info.augment == "none" && !n.mean.empty()) {
    train.mean = test.mean = n.mean[0];
    train.std = test.std = n.std[0];
    info.train_transform = info.eval_transform =
        "ToTensor() + " + data::Normalize(n.mean, n.std).name() + " per batch, in memory";
    return std::make_unique<InMemorySource>(std::move(train), std::move(test), options);
  }
  const data::Compose train_t = to_model(train_steps(options.image_size, info.augment), n);
  const data::Compose eval_t = to_model(eval_steps(options.image_size), n);
  info.train_transform = train_t.str();
  info.eval_transform = eval_t.str();
  return std::make_unique<LoaderSource>(
      std::make_shared<data::TensorImageDataset>(train.pixels, train.labels, train_t),
      std::make_shared<data::TensorImageDataset>(test.pixels, test.labels, eval_t), options,
      std::vector<std::string>{});
}

}  // namespace

std::unique_ptr<DataSource> DataSource::open(const DataSourceOptions& options) {
  check_options(options);
  const fs::path dir = options.path;
  std::error_code ec;
  FRUGAL_CHECK(fs::is_directory(dir, ec), "--data " + options.path + " is not a directory");
  DataInfo info;
  if (is_idx_dir(dir)) {
    auto source = open_idx(options, info);
    source->info_ = info;
    return source;
  }

  std::vector<std::string> scan_skipped;
  Views views;
  const auto record_scan = [&](const data::ImageFolder& folder) {
    for (const auto& s : folder.scan_skipped()) scan_skipped.push_back(s.path);
  };
  // An ImageFolder tree listed once, its channels probed unless given.
  const auto list_tree = [&](const fs::path& root, int channels) {
    auto folder = std::make_shared<data::ImageFolder>(
        root.string(), data::ImageFolderOptions{.channels = channels ? channels : 3,
                                                .skip_bad = options.skip_bad});
    record_scan(*folder);
    return folder;
  };
  const auto folder_views = [&](std::shared_ptr<data::ImageFolder> train_tree,
                                std::shared_ptr<data::ImageFolder> eval_tree,
                                const std::vector<std::int64_t>* train_part,
                                const std::vector<std::int64_t>* eval_part) {
    const int channels = static_cast<int>(info.channels);
    const MakeView train = [=](const data::Compose& t) -> std::shared_ptr<const data::Dataset> {
      auto view = train_tree->with_transform(t, channels);
      if (!train_part) return view;
      return std::make_shared<data::Subset>(view, *train_part);
    };
    const MakeView eval = [=](const data::Compose& t) -> std::shared_ptr<const data::Dataset> {
      auto view = eval_tree->with_transform(t, channels);
      if (!eval_part) return view;
      return std::make_shared<data::Subset>(view, *eval_part);
    };
    return make_views(train, eval, options, info);
  };
  const auto shard_views = [&](const std::vector<std::string>& train_files,
                               const std::vector<std::string>& test_files) {
    info.kind = "shards";
    // Raw shards keep their channels; encoded ones decode to those asked for.
    const int decode = options.channels ? options.channels : 0;
    const MakeView train = [=](const data::Compose& t) -> std::shared_ptr<const data::Dataset> {
      return std::make_shared<data::ShardDataset>(
          train_files, data::ShardDatasetOptions{.channels = decode, .transform = t});
    };
    const MakeView test = [=](const data::Compose& t) -> std::shared_ptr<const data::Dataset> {
      return std::make_shared<data::ShardDataset>(
          test_files, data::ShardDatasetOptions{.channels = decode, .transform = t});
    };
    const data::ShardDataset probe(train_files, data::ShardDatasetOptions{.channels = decode});
    info.classes = probe.classes();
    info.channels = probe.spec().data_sizes[0];
    return make_views(train, test, options, info);
  };

  const bool has_train = fs::is_directory(dir / "train", ec);
  const auto train_shards = shards_with_prefix(dir, "train"),
             test_shards = shards_with_prefix(dir, "test");
  if (has_train) {
    const fs::path test_dir = fs::is_directory(dir / "test", ec) ? dir / "test" : dir / "val";
    FRUGAL_CHECK(fs::is_directory(test_dir, ec),
                 "--data " + options.path + " has train/ but no test/ (or val/) beside it");
    info.split = "folders";
    if (holds_shards(dir / "train")) {
      views = shard_views({(dir / "train").string()}, {test_dir.string()});
    } else {
      info.kind = "imagefolder";
      auto train_tree = list_tree(dir / "train", options.channels);
      info.channels = probe_tree(*train_tree, options);
      auto test_tree = list_tree(test_dir, static_cast<int>(info.channels));
      info.classes = train_tree->classes();
      FRUGAL_CHECK(test_tree->classes() == train_tree->classes(),
                   "--data " + options.path + ": " + test_dir.filename().string() +
                       "/ holds other class folders than train/ (" +
                       std::to_string(test_tree->classes().size()) + " and " +
                       std::to_string(train_tree->classes().size()) +
                       "); the labels would not agree");
      views = folder_views(train_tree, test_tree, nullptr, nullptr);
    }
  } else if (!train_shards.empty()) {
    FRUGAL_CHECK(!test_shards.empty(),
                 "--data " + options.path + " has train-*.frs shards but no test-*.frs");
    info.split = "shards";
    views = shard_views(train_shards, test_shards);
  } else {
    // A root of class folders, as torchvision's ImageFolder takes it: hold out a part.
    if (!has_subdirectory(dir))
      throw Error("--data " + options.path +
                  " holds neither idx files (train-images-idx3-ubyte[.gz]), nor train/ and "
                  "test/ directories (ImageFolder trees or shards), nor train-*.frs and "
                  "test-*.frs shards, nor class folders of images (DIR/<class>/<image>)");
    const std::shared_ptr<data::ImageFolder> tree = list_tree(dir, options.channels);
    info.kind = "imagefolder";
    info.split = "held_out";
    info.val_fraction = options.val_fraction;
    info.classes = tree->classes();
    info.channels = probe_tree(*tree, options);
    const data::StratifiedSplit split =
        data::stratified_split(tree->labels(), options.val_fraction, options.seed);
    FRUGAL_CHECK(!split.held_out.empty(), "--data " + options.path +
                                              ": no class has two images, so none can be held "
                                              "out for evaluation (" +
                                              std::to_string(tree->size()) + " images)");
    views = folder_views(tree, tree, &split.train, &split.held_out);
  }
  auto source = std::make_unique<LoaderSource>(views.train, views.eval, options, scan_skipped);
  source->info_ = info;
  return source;
}

}  // namespace frugal::train
