// ImageFolder: torchvision's layout, root/<class>/<image>.png|jpg, classes sorted by name and
// numbered from 0, images decoded with stb_image into the channels asked for and passed
// through a Compose of transforms straight into the batch slot.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image.h"
#include "data/transforms.h"

namespace frugal::data {

struct ImageFolderOptions {
  // 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA; 0 takes the first image's own channels.
  int channels = 0;
  Compose transform = {};
  // File name endings (matched without regard to case) that count as images.
  std::vector<std::string> extensions = {".png", ".jpg", ".jpeg"};
  // Leave out what is found damaged while the tree is scanned (class directories that cannot
  // be listed, images before the first readable one) instead of failing: logged and listed
  // in scan_skipped(). Damage met later is get()'s error, which a DataLoader with skip_bad
  // leaves out.
  bool skip_bad = false;
};

// A file or directory left out by skip_bad, and why.
struct SkippedFile {
  std::string path, reason;
};

class ImageFolder : public Dataset {
 public:
  // Lists the tree (not the pixels: images are read when asked for). The sample shape is the
  // first readable image's after the transforms; every other image must come out the same,
  // or its get() fails naming it. Errors name the directory or file that cannot be read.
  explicit ImageFolder(const std::string& root, ImageFolderOptions options = {});

  // The same listing with another transform, and decoding to other channels if given (a
  // training and an evaluation view of one tree are listed once).
  std::shared_ptr<ImageFolder> with_transform(Compose transform,
                                              std::optional<int> channels = std::nullopt) const;

  std::int64_t size() const override { return static_cast<std::int64_t>(files_.size()); }
  SampleSpec spec() const override { return spec_; }
  void get(std::int64_t index, const SampleSlot& slot) const override;
  std::string source(std::int64_t index) const override;

  const std::vector<std::string>& classes() const { return classes_; }
  std::int64_t label(std::int64_t index) const {
    return labels_.at(static_cast<std::size_t>(index));
  }
  const std::vector<std::int64_t>& labels() const { return labels_; }
  const std::string& path(std::int64_t index) const {
    return files_.at(static_cast<std::size_t>(index));
  }
  // What the scan left out under skip_bad: class directories and images.
  const std::vector<SkippedFile>& scan_skipped() const { return scan_skipped_; }
  std::int64_t skipped_directories() const { return skipped_directories_; }
  // What the headers of (at most) `max_files` images spread over the tree say: `channels`
  // is 1 when every one stores gray (or gray + alpha), 3 when any stores colour (the channels
  // a model of this tree should take); `size_mismatch` names two of different sizes, if any.
  // A file whose header cannot be read is passed over (reading it will say why).
  struct Probe {
    int channels = 1;
    std::string size_mismatch;  // "a.png is 23x31 but b.png is 40x24", or empty
  };
  Probe probe(std::int64_t max_files = 64) const;
  // The decoded image before the transforms (what frugal-pack stores), checked against its
  // file name's extension.
  void decode(std::int64_t index, Image& out) const;
  const ImageShape& sample_shape() const { return shape_; }

 private:
  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<std::int64_t> labels_;
  std::int64_t skipped_directories_ = 0;
  std::vector<SkippedFile> scan_skipped_;
  ImageShape first_;  // the first readable image as decoded
  ImageShape shape_;  // after the transforms
  SampleSpec spec_;
};

// The spec of samples whose transformed image has `shape`: CHW data, an int64 class target.
SampleSpec image_sample_spec(const ImageShape& shape);
// Runs `transform` on `decoded` with the slot's seed and writes the result into the slot,
// checking it has `expected` shape (the error names dataset.source(index)).
void transform_into_slot(const Image& decoded, const Compose& transform, const ImageShape& expected,
                         std::int64_t label, const SampleSlot& slot, const Dataset& dataset,
                         std::int64_t index);

}  // namespace frugal::data
