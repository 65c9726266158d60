// The value transforms (ToTensor, Normalize), Compose with its fused steps (crop + flip,
// to-tensor + normalize: one pass over the pixels each), and the CHW write into a batch slot.
#include "data/transforms.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/error.h"
#include "data/transforms_internal.h"

namespace frugal::data {

using detail::crop_into;
using detail::Strides;
using detail::strides_of;

namespace {

// RandomCrop then RandomHorizontalFlip in one move of each pixel. The draws are the same,
// in the same order (crop top, crop left, flip), so the result is identical.
class CropThenFlip : public Transform {
 public:
  CropThenFlip(std::shared_ptr<const RandomCrop> crop,
               std::shared_ptr<const RandomHorizontalFlip> flip)
      : crop_(std::move(crop)), flip_(std::move(flip)) {}
  ImageShape output_shape(const ImageShape& in) const override { return crop_->output_shape(in); }
  bool apply(const Image& in, Image& out, SampleRandom& random) const override {
    const ImageShape os = crop_->output_shape(in.shape);
    const int pad = crop_->padding();
    const auto top = static_cast<int>(
        random.below(static_cast<std::uint64_t>(in.shape.height + 2 * pad - os.height + 1)));
    const auto left = static_cast<int>(
        random.below(static_cast<std::uint64_t>(in.shape.width + 2 * pad - os.width + 1)));
    const bool flip = random.uniform() < flip_->p();
    crop_into(in, out, os, top - pad, left - pad, flip);
    return true;
  }
  std::string name() const override { return crop_->name() + " + " + flip_->name(); }

 private:
  std::shared_ptr<const RandomCrop> crop_;
  std::shared_ptr<const RandomHorizontalFlip> flip_;
};

// ToTensor then Normalize as one multiply-add per value: x * (scale / std) - mean / std
// (equal to the two steps up to float rounding).
class ToTensorNormalize : public Transform {
 public:
  ToTensorNormalize(std::shared_ptr<const ToTensor> to_tensor,
                    std::shared_ptr<const Normalize> normalize)
      : to_tensor_(std::move(to_tensor)), normalize_(std::move(normalize)) {}
  ImageShape output_shape(const ImageShape& in) const override {
    return normalize_->output_shape(to_tensor_->output_shape(in));
  }
  bool apply(const Image& in, Image& out, SampleRandom&) const override {
    const ImageShape os = output_shape(in.shape);
    float* dst = static_cast<float*>(out.reset(os));
    const std::size_t HW = static_cast<std::size_t>(os.height) * os.width;
    const Strides si = strides_of(in.shape);
    const float scale = in.shape.is_float ? 1.0f : 1.0f / 255.0f;
    for (int c = 0; c < os.channels; ++c) {
      const std::size_t k = normalize_->mean().size() == 1 ? 0 : static_cast<std::size_t>(c);
      const float a = scale * normalize_->inv_std()[k],
                  b = -normalize_->mean()[k] * normalize_->inv_std()[k];
      float* d = dst + static_cast<std::size_t>(c) * HW;
      if (!in.shape.is_float) {
        const unsigned char* src = in.bytes() + c * si.c;
        if (si.x == 1) {
          for (std::size_t i = 0; i < HW; ++i) d[i] = static_cast<float>(src[i]) * a + b;
        } else {
          for (std::size_t i = 0; i < HW; ++i) d[i] = static_cast<float>(src[i * si.x]) * a + b;
        }
      } else {
        const float* src = static_cast<const float*>(in.pixels) + c * si.c;
        for (std::size_t i = 0; i < HW; ++i) d[i] = src[i * si.x] * a + b;
      }
    }
    return true;
  }
  std::string name() const override { return to_tensor_->name() + " + " + normalize_->name(); }

 private:
  std::shared_ptr<const ToTensor> to_tensor_;
  std::shared_ptr<const Normalize> normalize_;
};

}  // namespace

ImageShape ToTensor::output_shape(const ImageShape& in) const {
  ImageShape s = in;
  s.is_float = true;
  s.layout = ImageLayout::CHW;
  return s;
}

bool ToTensor::apply(const Image& in, Image& out, SampleRandom&) const {
  const ImageShape os = output_shape(in.shape);
  if (os == in.shape) return false;
  float* dst = static_cast<float*>(out.reset(os));
  const std::size_t C = static_cast<std::size_t>(os.channels),
                    HW = static_cast<std::size_t>(os.height) * os.width;
  const Strides si = strides_of(in.shape);
  if (!in.shape.is_float) {
    const unsigned char* src = in.bytes();
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t i = 0; i < HW; ++i)
        dst[c * HW + i] = static_cast<float>(src[c * si.c + i * si.x]) * (1.0f / 255.0f);
  } else {
    const float* src = static_cast<const float*>(in.pixels);
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t i = 0; i < HW; ++i) dst[c * HW + i] = src[c * si.c + i * si.x];
  }
  return true;
}

Normalize::Normalize(std::vector<float> mean, std::vector<float> std) : mean_(std::move(mean)) {
  FRUGAL_CHECK(!mean_.empty() && mean_.size() == std.size(),
               "Normalize: mean and std need the same, non-zero number of values, got " +
                   std::to_string(mean_.size()) + " and " + std::to_string(std.size()));
  for (float s : std) {
    FRUGAL_CHECK(s > 0, "Normalize: every std must be positive, got " + std::to_string(s));
    inv_std_.push_back(1.0f / s);
  }
}

ImageShape Normalize::output_shape(const ImageShape& in) const {
  FRUGAL_CHECK(in.is_float && in.layout == ImageLayout::CHW,
               name() + " needs a CHW float image (put ToTensor before it), got " + in.str());
  FRUGAL_CHECK(mean_.size() == 1 || static_cast<int>(mean_.size()) == in.channels,
               name() + " has " + std::to_string(mean_.size()) + " means for an image of " +
                   std::to_string(in.channels) + " channels");
  return in;
}

bool Normalize::apply(const Image& in, Image& out, SampleRandom&) const {
  const ImageShape os = output_shape(in.shape);
  float* dst = static_cast<float*>(out.reset(os));
  const float* src = static_cast<const float*>(in.pixels);
  const std::size_t HW = static_cast<std::size_t>(os.height) * os.width;
  for (int c = 0; c < os.channels; ++c) {
    const std::size_t k = mean_.size() == 1 ? 0 : static_cast<std::size_t>(c);
    const float m = mean_[k], s = inv_std_[k];
    const float* sp = src + c * HW;
    float* dp = dst + c * HW;
    for (std::size_t i = 0; i < HW; ++i) dp[i] = (sp[i] - m) * s;
  }
  return true;
}

std::string Normalize::name() const {
  std::string s = "Normalize(mean=[";
  for (std::size_t i = 0; i < mean_.size(); ++i) s += (i ? ", " : "") + std::to_string(mean_[i]);
  s += "], std=[";
  for (std::size_t i = 0; i < inv_std_.size(); ++i)
    s += (i ? ", " : "") + std::to_string(1.0f / inv_std_[i]);
  return s + "])";
}

Compose::Compose(std::vector<TransformPtr> transforms) : transforms_(std::move(transforms)) {
  for (const auto& t : transforms_) FRUGAL_CHECK(t != nullptr, "Compose: a transform is null");
  plan();
}

Compose& Compose::add(TransformPtr t) {
  FRUGAL_CHECK(t != nullptr, "Compose::add: the transform is null");
  transforms_.push_back(std::move(t));
  plan();
  return *this;
}

void Compose::plan() {
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id.fetch_add(1);
  steps_.clear();
  for (std::size_t i = 0; i < transforms_.size(); ++i) {
    const TransformPtr& t = transforms_[i];
    const TransformPtr* next = i + 1 < transforms_.size() ? &transforms_[i + 1] : nullptr;
    if (next) {
      auto crop = std::dynamic_pointer_cast<const RandomCrop>(t);
      auto flip = std::dynamic_pointer_cast<const RandomHorizontalFlip>(*next);
      if (crop && flip) {
        steps_.push_back(std::make_shared<CropThenFlip>(crop, flip));
        ++i;
        continue;
      }
      auto to_tensor = std::dynamic_pointer_cast<const ToTensor>(t);
      auto normalize = std::dynamic_pointer_cast<const Normalize>(*next);
      if (to_tensor && normalize) {
        steps_.push_back(std::make_shared<ToTensorNormalize>(to_tensor, normalize));
        ++i;
        continue;
      }
    }
    steps_.push_back(t);
  }
}

ImageShape Compose::output_shape(ImageShape in) const {
  for (const auto& t : transforms_) in = t->output_shape(in);
  return in;
}

const Image& Compose::operator()(const Image& in, Image& scratch_a, Image& scratch_b,
                                 SampleRandom& random) const {
  const Image* current = &in;
  for (const auto& t : steps_) {
    Image& target = current == &scratch_a ? scratch_b : scratch_a;
    if (t->apply(*current, target, random)) current = &target;
  }
  return *current;
}

void Compose::run_into(const Image& in, void* dst, Image& scratch_a, Image& scratch_b,
                       SampleRandom& random) const {
  const Image* current = &in;
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    Image& target = current == &scratch_a ? scratch_b : scratch_a;
    if (k + 1 == steps_.size()) {  // the last step: straight into the slot if laid out as CHW
      const ImageShape os = steps_[k]->output_shape(current->shape);
      if (os.layout == ImageLayout::CHW || os.channels == 1) target.target = dst;
    }
    const bool changed = steps_[k]->apply(*current, target, random);
    target.target = nullptr;
    if (changed) current = &target;
  }
  if (current->pixels != dst) write_chw(*current, dst);
}

std::string Compose::str() const {
  std::string s = "Compose(";
  for (std::size_t i = 0; i < transforms_.size(); ++i)
    s += (i ? ", " : "") + transforms_[i]->name();
  return s + ")";
}

void write_chw(const Image& image, void* dst) {
  const ImageShape& s = image.shape;
  if (s.layout == ImageLayout::CHW || s.channels == 1) {
    std::memcpy(dst, image.pixels, s.nbytes());
    return;
  }
  const std::size_t C = static_cast<std::size_t>(s.channels),
                    HW = static_cast<std::size_t>(s.height) * s.width;
  if (s.is_float) {
    const float* src = static_cast<const float*>(image.pixels);
    float* d = static_cast<float*>(dst);
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t i = 0; i < HW; ++i) d[c * HW + i] = src[i * C + c];
  } else {
    const unsigned char* src = image.bytes();
    unsigned char* d = static_cast<unsigned char*>(dst);
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t i = 0; i < HW; ++i) d[c * HW + i] = src[i * C + c];
  }
}

}  // namespace frugal::data
