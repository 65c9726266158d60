// ShardDataset: mapping the shards, checking they agree, and serving samples from the maps.
#include "data/shard_dataset.h"

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "data/image_folder.h"

namespace fs = std::filesystem;

namespace frugal::data {

namespace {

struct ThreadImages {
  Image decoded;
};
ThreadImages& thread_images() {
  thread_local ThreadImages images;
  return images;
}

}  // namespace

std::vector<std::string> list_shards(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return {path};
  std::vector<std::string> files;
  fs::directory_iterator it(path, ec);
  if (ec) throw Error("ShardDataset: cannot read directory " + path + ": " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) throw Error("ShardDataset: cannot read directory " + path + ": " + ec.message());
    if (it->path().extension() == ".frs") files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  FRUGAL_CHECK(!files.empty(), "ShardDataset: no .frs shard files in " + path);
  return files;
}

ShardDataset::ShardDataset(const std::vector<std::string>& paths, ShardDatasetOptions options)
    : options_(std::move(options)) {
  FRUGAL_CHECK(!paths.empty(), "ShardDataset: no shard paths given");
  for (const auto& p : paths)
    for (const auto& file : list_shards(p)) {
      auto shard = std::make_unique<ShardFile>(file);
      const ShardView& v = shard->view();
      if (!shards_.empty()) {
        const ShardView& first = shards_.front()->view();
        FRUGAL_CHECK(v.encoding == first.encoding && v.shape == first.shape,
                     file + ": its samples (" +
                         (v.encoding == ShardEncoding::Raw ? v.shape.str() : "encoded") +
                         ") differ from those of " + first.name);
        FRUGAL_CHECK(v.classes == first.classes,
                     file + ": its class names differ from those of " + first.name);
      }
      starts_.push_back(size_);
      size_ += static_cast<std::int64_t>(v.count);
      shards_.push_back(std::move(shard));
    }
  FRUGAL_CHECK(size_ > 0, "ShardDataset: the shards hold no samples");
  const ShardView& first = shards_.front()->view();
  classes_ = first.classes;
  std::size_t first_shard = 0;
  while (shards_[first_shard]->view().count == 0) ++first_shard;
  Image sample;
  decode_sample(*shards_[first_shard], 0, sample);
  shape_ = options_.transform.output_shape(sample.shape);
  spec_ = image_sample_spec(shape_);
}

std::pair<const ShardFile*, std::uint64_t> ShardDataset::locate(std::int64_t index) const {
  FRUGAL_CHECK(index >= 0 && index < size_, "ShardDataset: index " + std::to_string(index) +
                                                " out of range for " + std::to_string(size_) +
                                                " samples");
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), index) - 1;
  const auto s = static_cast<std::size_t>(it - starts_.begin());
  return {shards_[s].get(), static_cast<std::uint64_t>(index - *it)};
}

void ShardDataset::decode_sample(const ShardFile& shard, std::uint64_t i, Image& out) const {
  const ShardView& v = shard.view();
  if (v.encoding == ShardEncoding::Raw) {
    out.borrow(v.shape, v.sample(i));  // read in place from the mapping
    return;
  }
  const ShardView::Entry e = v.entry(i);
  decode_image(v.base + e.offset, e.length, options_.channels,
               v.name + " (sample " + std::to_string(i) + " at byte offset " +
                   std::to_string(e.offset) + ")",
               out);
}

void ShardDataset::get(std::int64_t index, const SampleSlot& slot) const {
  const auto [shard, i] = locate(index);
  Image& decoded = thread_images().decoded;
  decode_sample(*shard, i, decoded);
  transform_into_slot(decoded, options_.transform, shape_, shard->view().entry(i).label, slot,
                      *this, index);
}

void ShardDataset::prefetch(std::int64_t index) const {
  if (index < 0 || index >= size_) return;
  const auto [shard, i] = locate(index);
  const ShardView::Entry e = shard->view().entry(i);
  const unsigned char* p = shard->view().base + e.offset;
  // Raw samples are read whole; of an encoded one, its first 4 KiB hold the headers.
  const std::size_t bytes = std::min<std::size_t>(e.length, 4096);
  for (std::size_t k = 0; k < bytes; k += 64) __builtin_prefetch(p + k);
}

std::string ShardDataset::source(std::int64_t index) const {
  if (index < 0 || index >= size_) return "index " + std::to_string(index);
  const auto [shard, i] = locate(index);
  return shard->path() + " sample " + std::to_string(i) + " at byte offset " +
         std::to_string(shard->view().entry(i).offset);
}

std::int64_t ShardDataset::label(std::int64_t index) const {
  const auto [shard, i] = locate(index);
  return shard->view().entry(i).label;
}

std::vector<std::int64_t> ShardDataset::group_sizes() const {
  std::vector<std::int64_t> sizes;
  for (const auto& s : shards_) sizes.push_back(static_cast<std::int64_t>(s->view().count));
  return sizes;
}

}  // namespace frugal::data
