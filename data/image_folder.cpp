// ImageFolder: listing the class directories, and the per-sample path file -> bytes ->
// pixels -> transforms -> batch slot, with per-thread buffers so that a warm worker
// allocates nothing.
#include "data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "common/error.h"

namespace fs = std::filesystem;

namespace frugal::data {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has_extension(const std::string& name, const std::vector<std::string>& extensions) {
  const std::string l = lower(name);
  for (const auto& e : extensions) {
    const std::string le = lower(e);
    if (l.size() > le.size() && l.compare(l.size() - le.size(), le.size(), le) == 0) return true;
  }
  return false;
}

// The format a file name promises, from its extension.
ImageFormat named_format(const std::string& name) {
  const std::string l = lower(name);
  auto ends = [&](const char* e) {
    const std::size_t n = std::char_traits<char>::length(e);
    return l.size() >= n && l.compare(l.size() - n, n, e) == 0;
  };
  if (ends(".png")) return ImageFormat::Png;
  if (ends(".jpg") || ends(".jpeg")) return ImageFormat::Jpeg;
  return ImageFormat::Unknown;
}

std::vector<fs::directory_entry> list_directory(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw Error("ImageFolder: cannot read directory " + dir.string() + ": " + ec.message());
  std::vector<fs::directory_entry> entries;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    entries.push_back(*it);
  }
  if (ec) throw Error("ImageFolder: cannot read directory " + dir.string() + ": " + ec.message());
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return entries;
}

// Per worker thread: the file's bytes, the decoded image and the transforms' two scratch
// images, kept between samples so that their capacity is reused.
struct ThreadBuffers {
  std::vector<unsigned char> file;
  Image decoded, a, b;
};
ThreadBuffers& thread_buffers() {
  thread_local ThreadBuffers buffers;
  return buffers;
}

}  // namespace

SampleSpec image_sample_spec(const ImageShape& shape) {
  SampleSpec spec;
  spec.data_sizes = {shape.channels, shape.height, shape.width};
  spec.data_dtype = shape.is_float ? kFloat32 : kUInt8;
  spec.target_sizes = {};
  spec.target_dtype = kInt64;
  return spec;
}

void transform_into_slot(const Image& decoded, const Compose& transform, const ImageShape& expected,
                         std::int64_t label, const SampleSlot& slot, const Dataset& dataset,
                         std::int64_t index) {
  ThreadBuffers& t = thread_buffers();
  // Working out the output shape costs a virtual call per transform: remember the last one.
  thread_local std::uint64_t known_transform = 0;
  thread_local ImageShape known_input, known_output;
  if (known_transform != transform.id() || !(known_input == decoded.shape)) {
    known_output = transform.output_shape(decoded.shape);
    known_transform = transform.id();
    known_input = decoded.shape;
  }
  if (!(known_output == expected))
    throw Error(dataset.source(index) + ": image " + decoded.shape.str() + " becomes " +
                known_output.str() + " after " + transform.str() +
                ", but the data set's samples are " + expected.str() +
                " (set by the first image; add Resize and CenterCrop to make them agree, as "
                "frugal-train --image-size N does)");
  SampleRandom random(slot.seed);
  transform.run_into(decoded, slot.data, t.a, t.b, random);
  *static_cast<std::int64_t*>(slot.target) = label;
}

ImageFolder::ImageFolder(const std::string& root, ImageFolderOptions options)
    : root_(root), options_(std::move(options)) {
  FRUGAL_CHECK(options_.channels >= 0 && options_.channels <= 4,
               "ImageFolder: channels must be 0 (as stored), 1, 2, 3 or 4, got " +
                   std::to_string(options_.channels));
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw Error("ImageFolder: " + root + " is not a directory" +
                (ec ? ": " + ec.message() : std::string()));
  for (const auto& entry : list_directory(root)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code status_error;
    const fs::file_status status = fs::status(entry.path(), status_error);
    if (status_error && !entry.is_symlink(ec)) continue;
    if (status_error) {  // a link to nothing where a class directory should be
      if (!options_.skip_bad)
        throw Error("ImageFolder: cannot read class directory " + entry.path().string() + ": " +
                    status_error.message());
      std::fprintf(stderr, "ImageFolder: skipping unreadable class directory %s: %s\n",
                   entry.path().c_str(), status_error.message().c_str());
      scan_skipped_.push_back({entry.path().string(), status_error.message()});
      ++skipped_directories_;
      continue;
    }
    if (!fs::is_directory(status)) continue;  // loose files beside the classes are ignored
    std::vector<fs::directory_entry> images;
    try {
      images = list_directory(entry.path());
    } catch (const Error& e) {
      if (!options_.skip_bad) throw;
      std::fprintf(stderr, "%s (skipped)\n", e.what());
      scan_skipped_.push_back({entry.path().string(), e.what()});
      ++skipped_directories_;
      continue;
    }
    const auto label = static_cast<std::int64_t>(classes_.size());
    classes_.push_back(name);
    for (const auto& image : images) {
      const std::string file = image.path().filename().string();
      if (file.empty() || file[0] == '.' || !has_extension(file, options_.extensions)) continue;
      files_.push_back(image.path().string());
      labels_.push_back(label);
    }
  }
  FRUGAL_CHECK(!classes_.empty(), "ImageFolder: " + root +
                                      " has no class directories (expected root/<class>/<image>)");
  FRUGAL_CHECK(!files_.empty(), "ImageFolder: no images under " + root +
                                    " (looked for root/<class>/*.png|jpg|jpeg)");
  // The sample shape comes from the first image that decodes; under skip_bad the damaged
  // ones before it are left out of the listing (so they are not met, or counted, again).
  Image first;
  for (;;) {
    try {
      decode(0, first);
      break;
    } catch (const Error& e) {
      if (!options_.skip_bad) throw;
      std::fprintf(stderr, "ImageFolder: skipping %s\n", e.what());
      scan_skipped_.push_back({files_.front(), e.what()});
      files_.erase(files_.begin());
      labels_.erase(labels_.begin());
      FRUGAL_CHECK(!files_.empty(), "ImageFolder: no readable image under " + root +
                                        " (every one was damaged; see the lines above)");
    }
  }
  first_ = first.shape;
  shape_ = options_.transform.output_shape(first_);
  spec_ = image_sample_spec(shape_);
}

std::shared_ptr<ImageFolder> ImageFolder::with_transform(Compose transform,
                                                        std::optional<int> channels) const {
  auto view = std::make_shared<ImageFolder>(*this);
  if (channels) {
    FRUGAL_CHECK(*channels >= 1 && *channels <= 4,
                 "ImageFolder::with_transform: channels must be 1, 2, 3 or 4, got " +
                     std::to_string(*channels));
    view->options_.channels = *channels;
    view->first_.channels = *channels;  // the same pixels decoded to other channels
  }
  view->shape_ = transform.output_shape(view->first_);
  view->spec_ = image_sample_spec(view->shape_);
  view->options_.transform = std::move(transform);
  return view;
}

ImageFolder::Probe ImageFolder::probe(std::int64_t max_files) const {
  Probe result;
  const std::int64_t n = size(), step = std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, max_files));
  std::vector<unsigned char> bytes;
  std::optional<ImageHeader> first;
  std::size_t first_index = 0;
  for (std::int64_t i = 0; i < n; i += step) {
    const std::string& file = files_[static_cast<std::size_t>(i)];
    try {
      read_file_into(file, bytes);
    } catch (const Error&) {
      continue;
    }
    const std::optional<ImageHeader> header = peek_image_header(bytes.data(), bytes.size());
    if (!header) continue;
    if (header->channels >= 3) result.channels = 3;
    if (!first) {
      first = header;
      first_index = static_cast<std::size_t>(i);
    } else if (result.size_mismatch.empty() &&
               (header->height != first->height || header->width != first->width)) {
      result.size_mismatch = files_[first_index] + " is " + std::to_string(first->height) + "x" +
                             std::to_string(first->width) + " but " + file + " is " +
                             std::to_string(header->height) + "x" + std::to_string(header->width);
    }
  }
  return result;
}

void ImageFolder::decode(std::int64_t index, Image& out) const {
  FRUGAL_CHECK(index >= 0 && index < size(), "ImageFolder: index " + std::to_string(index) +
                                                 " out of range for " + std::to_string(size()) +
                                                 " images");
  const std::string& path = files_[static_cast<std::size_t>(index)];
  std::vector<unsigned char>& bytes = thread_buffers().file;
  read_file_into(path, bytes);
  const ImageFormat named = named_format(path);
  const ImageFormat found = sniff_image_format(bytes.data(), bytes.size());
  if (named != ImageFormat::Unknown && found != ImageFormat::Unknown && named != found)
    throw Error(path + ": named as " + image_format_name(named) + " but its bytes are " +
                image_format_name(found));
  decode_image(bytes.data(), bytes.size(), options_.channels, path, out);
}

void ImageFolder::get(std::int64_t index, const SampleSlot& slot) const {
  ThreadBuffers& t = thread_buffers();
  decode(index, t.decoded);
  transform_into_slot(t.decoded, options_.transform, shape_,
                      labels_[static_cast<std::size_t>(index)], slot, *this, index);
}

std::string ImageFolder::source(std::int64_t index) const {
  if (index < 0 || index >= size()) return "index " + std::to_string(index);
  return files_[static_cast<std::size_t>(index)];
}

}  // namespace frugal::data
