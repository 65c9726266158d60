// load_mnist: finds the split's two idx files, checks that they describe one dataset, and
// converts pixels to normalised float32 and labels to int64 in a single pass each.
#include "data/mnist.h"

#include <cmath>
#include <filesystem>

#include "common/error.h"
#include "data/idx.h"
#include "engine/ops/factory.h"

namespace frugal::data {

namespace {

// The plain file when present, else the gzip one; an error listing both names otherwise.
std::string find_file(const std::string& dir, const std::string& stem) {
  namespace fs = std::filesystem;
  const fs::path plain = fs::path(dir) / stem;
  const fs::path gz = fs::path(dir) / (stem + ".gz");
  std::error_code ec;
  if (fs::is_regular_file(plain, ec)) return plain.string();
  if (fs::is_regular_file(gz, ec)) return gz.string();
  throw Error("load_mnist: neither " + plain.string() + " nor " + gz.string() + " exists" +
              (fs::is_directory(dir, ec) ? "" : " (no directory " + dir + ")"));
}

}  // namespace

MnistDataset load_mnist(const std::string& dir, Split split, double mean, double std) {
  FRUGAL_CHECK(std::isfinite(mean) && std::isfinite(std) && std > 0,
               "load_mnist: normalisation needs a finite mean and a positive std, got mean " +
                   std::to_string(mean) + ", std " + std::to_string(std));
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");

  Tensor raw_images = read_idx(images_path);
  FRUGAL_CHECK(raw_images.dtype() == kUInt8 && raw_images.dim() == 3,
               "load_mnist: " + images_path + ": expected uint8 images [N, H, W], found " +
                   dtype_name(raw_images.dtype()) + " " + shape_string(raw_images.sizes()));
  Tensor raw_labels = read_idx(labels_path);
  FRUGAL_CHECK(raw_labels.dtype() == kUInt8 && raw_labels.dim() == 1,
               "load_mnist: " + labels_path + ": expected uint8 labels [N], found " +
                   dtype_name(raw_labels.dtype()) + " " + shape_string(raw_labels.sizes()));
  const std::int64_t n = raw_images.size(0);
  FRUGAL_CHECK(raw_labels.size(0) == n,
               "load_mnist: " + images_path + " holds " + std::to_string(n) + " images but " +
                   labels_path + " holds " + std::to_string(raw_labels.size(0)) + " labels");

  MnistDataset ds;
  ds.mean = mean;
  ds.std = std;
  ds.pixels = raw_images.view({n, 1, raw_images.size(1), raw_images.size(2)});

  ds.labels = empty({n}, kInt64);
  const std::uint8_t* lsrc = raw_labels.data_ptr<std::uint8_t>();
  std::int64_t* ldst = ds.labels.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) ldst[i] = lsrc[i];
  return ds;
}

Tensor MnistDataset::normalize(const Tensor& px) const {
  FRUGAL_CHECK(
      px.dtype() == kUInt8,
      std::string("MnistDataset::normalize: expected uint8 pixels, got ") + dtype_name(px.dtype()));
  const Tensor src_t = px.contiguous();
  Tensor out = empty(px.sizes(), kFloat32);
  // One multiply-add per pixel: (p / 255 - mean) / std == p * scale + shift.
  const float scale = static_cast<float>(1.0 / (255.0 * std));
  const float shift = static_cast<float>(-mean / std);
  const std::uint8_t* src = src_t.data_ptr<std::uint8_t>();
  float* dst = out.data_ptr<float>();
  for (std::int64_t i = 0; i < out.numel(); ++i)
    dst[i] = static_cast<float>(src[i]) * scale + shift;
  return out;
}

}  // namespace frugal::data
