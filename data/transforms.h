// Image transforms with torchvision's names and semantics, composed in order: Resize,
// RandomCrop (with padding), RandomResizedCrop, CenterCrop, RandomHorizontalFlip, ToTensor
// (HWC uint8 -> CHW float in [0, 1]) and Normalize. Each knows the shape it produces, so a dataset knows its
// sample shape before decoding anything; random ones draw from the sample's own generator.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/image.h"
#include "data/sample_random.h"

namespace frugal::data {

class Transform {
 public:
  virtual ~Transform() = default;
  // The shape this transform makes of `in`; a frugal::Error when it cannot take `in`.
  virtual ImageShape output_shape(const ImageShape& in) const = 0;
  // Writes the transformed `in` into `out` and returns true, or returns false when the image
  // passes through unchanged (a flip that was not drawn), saving a copy.
  virtual bool apply(const Image& in, Image& out, SampleRandom& random) const = 0;
  virtual std::string name() const = 0;
};
using TransformPtr = std::shared_ptr<const Transform>;

// Bilinear resampling with half-pixel centres (as torch's interpolate with
// align_corners=False, without antialiasing). With one size the shorter side becomes `size`
// and the other keeps the aspect ratio (torchvision's Resize(int)).
class Resize : public Transform {
 public:
  Resize(int height, int width);
  explicit Resize(int shorter_side);
  ImageShape output_shape(const ImageShape& in) const override;
  bool apply(const Image& in, Image& out, SampleRandom& random) const override;
  std::string name() const override;

 private:
  int height_ = 0, width_ = 0, shorter_ = 0;
};

// Pads every side with `padding` zeros, then takes a size x size window at a random place.
class RandomCrop : public Transform {
 public:
  RandomCrop(int height, int width, int padding);
  explicit RandomCrop(int size, int padding = 0) : RandomCrop(size, size, padding) {}
  ImageShape output_shape(const ImageShape& in) const override;
  bool apply(const Image& in, Image& out, SampleRandom& random) const override;
  std::string name() const override;
  int height() const { return height_; }
  int width() const { return width_; }
  int padding() const { return padding_; }

 private:
  int height_, width_, padding_;
};

// A random window of the image, resized to size x size: its area a uniform fraction in
// `scale` of the image's, its width/height ratio log-uniform in `ratio` (torchvision's
// RandomResizedCrop, the training crop of its ImageNet recipe; bilinear as Resize).
class RandomResizedCrop : public Transform {
 public:
  explicit RandomResizedCrop(int size, std::pair<double, double> scale = {0.08, 1.0},
                             std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0});
  ImageShape output_shape(const ImageShape& in) const override;
  bool apply(const Image& in, Image& out, SampleRandom& random) const override;
  std::string name() const override;

  struct Window {
    int top, left, height, width;
  };
  // The window drawn for an image of height x width (what apply() resamples).
  Window draw(int height, int width, SampleRandom& random) const;

 private:
  int size_;
  std::pair<double, double> scale_, ratio_;
};

// The central window (zero-padded where the image is smaller, as torchvision does).
class CenterCrop : public Transform {
 public:
  CenterCrop(int height, int width);
  explicit CenterCrop(int size) : CenterCrop(size, size) {}
  ImageShape output_shape(const ImageShape& in) const override;
  bool apply(const Image& in, Image& out, SampleRandom& random) const override;
  std::string name() const override;

 private:
  int height_, width_;
};

// Mirrors left-right with probability p.
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  ImageShape output_shape(const ImageShape& in) const override { return in; }
  bool apply(const Image& in, Image& out, SampleRandom& random) const override;
  std::string name() const override;
  double p() const { return p_; }

 private:
  double p_;
};

// HWC (or CHW) uint8 in [0, 255] -> CHW float32 in [0, 1]; a float image (from a 16-bit PNG,
// already in [0, 1]) is only laid out as CHW.
class ToTensor : public Transform {
 public:
  ImageShape output_shape(const ImageShape& in) const override;
  bool apply(const Image& in, Image& out, SampleRandom& random) const override;
  std::string name() const override { return "ToTensor()"; }
};

// (x - mean[c]) / std[c] on a CHW float image; one mean/std value applies to every channel.
class Normalize : public Transform {
 public:
  Normalize(std::vector<float> mean, std::vector<float> std);
  ImageShape output_shape(const ImageShape& in) const override;
  bool apply(const Image& in, Image& out, SampleRandom& random) const override;
  std::string name() const override;
  const std::vector<float>& mean() const { return mean_; }
  const std::vector<float>& inv_std() const { return inv_std_; }

 private:
  std::vector<float> mean_, inv_std_;
};

// Transforms applied in order. Neighbours that are cheaper done together run fused, with
// the same random draws and results as one after the other: RandomCrop then
// RandomHorizontalFlip move each pixel once, and ToTensor then Normalize convert and scale in
// one pass. The last step writes straight into the batch slot when it can.
class Compose {
 public:
  Compose() = default;
  Compose(std::vector<TransformPtr> transforms);  // NOLINT: a list reads naturally
  Compose(std::initializer_list<TransformPtr> transforms)
      : Compose(std::vector<TransformPtr>(transforms)) {}
  Compose& add(TransformPtr t);
  ImageShape output_shape(ImageShape in) const;
  // Runs every transform, ping-ponging between the two scratch images; returns the result
  // (which is `in` itself when nothing changed it).
  const Image& operator()(const Image& in, Image& scratch_a, Image& scratch_b,
                          SampleRandom& random) const;
  // Runs every transform and leaves the result in `dst` as CHW (see write_chw), the last
  // step writing there directly where its output is already laid out that way.
  void run_into(const Image& in, void* dst, Image& scratch_a, Image& scratch_b,
                SampleRandom& random) const;
  bool empty() const { return transforms_.empty(); }
  std::string str() const;
  // Differs between any two Composes that hold different transforms (a copy keeps it), so
  // per-thread caches can key on it safely.
  std::uint64_t id() const { return id_; }

 private:
  void plan();
  std::uint64_t id_ = 0;
  std::vector<TransformPtr> transforms_;  // as given
  std::vector<TransformPtr> steps_;       // as run (fused where possible)
};

// Writes `image` to `dst` as CHW, keeping its element type (the layout of a batch slot).
void write_chw(const Image& image, void* dst);

}  // namespace frugal::data
