// Transform implementations. Crops and flips move whole pixels as bytes (one memcpy per row
// where no mirroring is needed), so they cost the same for uint8 and float, HWC and CHW.
#include "data/transforms.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "common/error.h"

namespace frugal::data {

namespace {

// A layout-independent view: `planes` planes of height x width pixels of `pixel_bytes`.
struct Planes {
  int planes;
  std::size_t pixel_bytes;
};

Planes planes_of(const ImageShape& s) {
  if (s.layout == ImageLayout::HWC)
    return {1, s.element_bytes() * static_cast<std::size_t>(s.channels)};
  return {s.channels, s.element_bytes()};
}

// One pixel of N bytes, copied by value so the compiler moves it in registers.
template <std::size_t N>
struct Pixel {
  unsigned char b[N];
};

// One output row of the window: zeros where the source column left + wx falls outside
// [0, W), the source pixels elsewhere, mirrored (output x shows window column ow-1-x) when
// `flip`. [x0, x1) are the window columns that fall inside the source.
template <std::size_t N>
void crop_row(const unsigned char* srow, unsigned char* drow, int left, int ow, int x0, int x1,
              bool flip) {
  using P = Pixel<N>;
  const P* s = reinterpret_cast<const P*>(srow) + left;  // s[wx] is window column wx
  P* d = reinterpret_cast<P*>(drow);
  const P zero{};
  if (!flip) {
    for (int x = 0; x < x0; ++x) d[x] = zero;
    for (int x = x0; x < x1; ++x) d[x] = s[x];
    for (int x = x1; x < ow; ++x) d[x] = zero;
    return;
  }
  const int a = ow - x1, b = ow - x0;  // output columns whose mirror lies inside
  for (int x = 0; x < a; ++x) d[x] = zero;
  for (int x = a; x < b; ++x) d[x] = s[ow - 1 - x];
  for (int x = b; x < ow; ++x) d[x] = zero;
}

using RowFn = void (*)(const unsigned char*, unsigned char*, int, int, int, int, bool);

RowFn row_function(std::size_t pixel_bytes) {
  switch (pixel_bytes) {
    case 1:
      return crop_row<1>;
    case 2:
      return crop_row<2>;
    case 3:
      return crop_row<3>;
    case 4:
      return crop_row<4>;
    case 8:
      return crop_row<8>;
    case 12:
      return crop_row<12>;
    case 16:
      return crop_row<16>;
    default:
      return nullptr;
  }
}

// out = the window of `in` with top-left (top, left) and out's size, zeros outside `in`,
// mirrored left-right when `flip`.
void crop_into(const Image& in, Image& out, const ImageShape& out_shape, int top, int left,
               bool flip) {
  unsigned char* dst = static_cast<unsigned char*>(out.reset(out_shape));
  const Planes p = planes_of(in.shape);
  const int H = in.shape.height, W = in.shape.width, oh = out_shape.height, ow = out_shape.width;
  const std::size_t px = p.pixel_bytes;
  const std::size_t in_row = px * static_cast<std::size_t>(W),
                    out_row = px * static_cast<std::size_t>(ow);
  // Columns x of the window whose source column left + x lies inside the image.
  const int x0 = std::clamp(-left, 0, ow), x1 = std::clamp(W - left, 0, ow);
  const RowFn row = row_function(px);
  const unsigned char* src = in.bytes();
  for (int plane = 0; plane < p.planes; ++plane) {
    const unsigned char* src_plane =
        src + static_cast<std::size_t>(plane) * in_row * static_cast<std::size_t>(H);
    unsigned char* dst_plane =
        dst + static_cast<std::size_t>(plane) * out_row * static_cast<std::size_t>(oh);
    for (int y = 0; y < oh; ++y) {
      unsigned char* drow = dst_plane + static_cast<std::size_t>(y) * out_row;
      const int sy = top + y;
      if (sy < 0 || sy >= H || x0 >= x1) {
        std::memset(drow, 0, out_row);
        continue;
      }
      const unsigned char* srow = src_plane + static_cast<std::size_t>(sy) * in_row;
      if (row) {
        row(srow, drow, left, ow, x0, x1, flip);
        continue;
      }
      for (int x = 0; x < ow; ++x) {  // pixels of an unusual size: byte copies
        const int wx = flip ? ow - 1 - x : x;
        unsigned char* d = drow + px * static_cast<std::size_t>(x);
        if (wx < x0 || wx >= x1)
          std::memset(d, 0, px);
        else
          std::memcpy(d, srow + px * static_cast<std::size_t>(left + wx), px);
      }
    }
  }
}

ImageShape with_size(ImageShape s, int h, int w) {
  s.height = h;
  s.width = w;
  return s;
}

// Element (c, y, x) lives at c * cs + y * ys + x * xs in either layout.
struct Strides {
  std::size_t c, y, x;
};
Strides strides_of(const ImageShape& s) {
  const auto C = static_cast<std::size_t>(s.channels), H = static_cast<std::size_t>(s.height),
             W = static_cast<std::size_t>(s.width);
  if (s.layout == ImageLayout::HWC) return {1, W * C, C};
  return {H * W, W, 1};
}

// Source sample positions of bilinear resampling along one axis (half-pixel centres).
struct Taps {
  std::vector<int> i0, i1;
  std::vector<float> w1;
};
Taps taps(int in, int out) {
  Taps t;
  t.i0.resize(out);
  t.i1.resize(out);
  t.w1.resize(out);
  const double scale = static_cast<double>(in) / out;
  for (int o = 0; o < out; ++o) {
    const double s = std::max(0.0, (o + 0.5) * scale - 0.5);
    const int i0 = std::min(static_cast<int>(s), in - 1);
    t.i0[o] = i0;
    t.i1[o] = std::min(i0 + 1, in - 1);
    t.w1[o] = static_cast<float>(s - i0);
  }
  return t;
}

// The source rectangle a resampling reads: rows [top, top + height), columns [left, left + width).
struct SourceWindow {
  int top, left, height, width;
};

template <class T>
void resize_typed(const Image& in, const SourceWindow& window, Image& out, const ImageShape& os) {
  T* dst = static_cast<T*>(out.reset(os));
  const T* src = static_cast<const T*>(in.pixels);
  const Strides si = strides_of(in.shape), so = strides_of(os);
  const Taps ty = taps(window.height, os.height), tx = taps(window.width, os.width);
  for (int c = 0; c < os.channels; ++c)
    for (int y = 0; y < os.height; ++y) {
      const T* r0 = src + c * si.c + static_cast<std::size_t>(window.top + ty.i0[y]) * si.y;
      const T* r1 = src + c * si.c + static_cast<std::size_t>(window.top + ty.i1[y]) * si.y;
      const float wy = ty.w1[y];
      for (int x = 0; x < os.width; ++x) {
        const std::size_t a = static_cast<std::size_t>(window.left + tx.i0[x]) * si.x,
                          b = static_cast<std::size_t>(window.left + tx.i1[x]) * si.x;
        const float wx = tx.w1[x];
        const float top = static_cast<float>(r0[a]) +
                          (static_cast<float>(r0[b]) - static_cast<float>(r0[a])) * wx;
        const float bottom = static_cast<float>(r1[a]) +
                             (static_cast<float>(r1[b]) - static_cast<float>(r1[a])) * wx;
        const float v = top + (bottom - top) * wy;
        T* d = dst + c * so.c + static_cast<std::size_t>(y) * so.y +
               static_cast<std::size_t>(x) * so.x;
        if constexpr (std::is_same_v<T, unsigned char>)
          *d = static_cast<T>(std::clamp(v + 0.5f, 0.0f, 255.0f));
        else
          *d = v;
      }
    }
}

void resize_window(const Image& in, const SourceWindow& window, Image& out, const ImageShape& os) {
  if (in.shape.is_float)
    resize_typed<float>(in, window, out, os);
  else
    resize_typed<unsigned char>(in, window, out, os);
}

void check_positive(int v, const char* what, const std::string& who) {
  FRUGAL_CHECK(v > 0, who + ": " + what + " must be positive, got " + std::to_string(v));
}

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

Resize::Resize(int height, int width) : height_(height), width_(width) {
  check_positive(height, "height", "Resize");
  check_positive(width, "width", "Resize");
}
Resize::Resize(int shorter_side) : shorter_(shorter_side) {
  check_positive(shorter_side, "size", "Resize");
}

ImageShape Resize::output_shape(const ImageShape& in) const {
  if (!shorter_) return with_size(in, height_, width_);
  FRUGAL_CHECK(in.height > 0 && in.width > 0, "Resize: empty image " + in.str());
  if (in.height <= in.width)
    return with_size(in, shorter_,
                     static_cast<int>(static_cast<std::int64_t>(shorter_) * in.width / in.height));
  return with_size(in, static_cast<int>(static_cast<std::int64_t>(shorter_) * in.height / in.width),
                   shorter_);
}

bool Resize::apply(const Image& in, Image& out, SampleRandom&) const {
  const ImageShape os = output_shape(in.shape);
  if (os == in.shape) return false;
  resize_window(in, {0, 0, in.shape.height, in.shape.width}, out, os);
  return true;
}

std::string Resize::name() const {
  return shorter_ ? "Resize(" + std::to_string(shorter_) + ")"
                  : "Resize(" + std::to_string(height_) + ", " + std::to_string(width_) + ")";
}

RandomCrop::RandomCrop(int height, int width, int padding)
    : height_(height), width_(width), padding_(padding) {
  check_positive(height, "height", "RandomCrop");
  check_positive(width, "width", "RandomCrop");
  FRUGAL_CHECK(padding >= 0, "RandomCrop: padding must be >= 0, got " + std::to_string(padding));
}

ImageShape RandomCrop::output_shape(const ImageShape& in) const {
  FRUGAL_CHECK(in.height + 2 * padding_ >= height_ && in.width + 2 * padding_ >= width_,
               name() + ": the padded image " + std::to_string(in.height + 2 * padding_) + "x" +
                   std::to_string(in.width + 2 * padding_) + " is smaller than the crop");
  return with_size(in, height_, width_);
}

bool RandomCrop::apply(const Image& in, Image& out, SampleRandom& random) const {
  const ImageShape os = output_shape(in.shape);
  const auto top = static_cast<int>(
      random.below(static_cast<std::uint64_t>(in.shape.height + 2 * padding_ - height_ + 1)));
  const auto left = static_cast<int>(
      random.below(static_cast<std::uint64_t>(in.shape.width + 2 * padding_ - width_ + 1)));
  crop_into(in, out, os, top - padding_, left - padding_, false);
  return true;
}

std::string RandomCrop::name() const {
  return "RandomCrop(" + std::to_string(height_) + "x" + std::to_string(width_) +
         ", padding=" + std::to_string(padding_) + ")";
}

RandomResizedCrop::RandomResizedCrop(int size, std::pair<double, double> scale,
                                     std::pair<double, double> ratio)
    : size_(size), scale_(scale), ratio_(ratio) {
  check_positive(size, "size", "RandomResizedCrop");
  FRUGAL_CHECK(scale.first > 0 && scale.first <= scale.second && scale.second <= 1,
               "RandomResizedCrop: scale must satisfy 0 < min <= max <= 1, got (" +
                   std::to_string(scale.first) + ", " + std::to_string(scale.second) + ")");
  FRUGAL_CHECK(ratio.first > 0 && ratio.first <= ratio.second,
               "RandomResizedCrop: ratio must satisfy 0 < min <= max, got (" +
                   std::to_string(ratio.first) + ", " + std::to_string(ratio.second) + ")");
}

ImageShape RandomResizedCrop::output_shape(const ImageShape& in) const {
  FRUGAL_CHECK(in.height > 0 && in.width > 0, name() + ": empty image " + in.str());
  return with_size(in, size_, size_);
}

// torchvision's RandomResizedCrop.get_params: up to ten draws of an area fraction and a
// log-uniform aspect ratio, the first window that fits is taken at a random place; if none
// fits, the whole image clamped to the ratio range, centred.
RandomResizedCrop::Window RandomResizedCrop::draw(int height, int width,
                                                  SampleRandom& random) const {
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(ratio_.first), log_hi = std::log(ratio_.second);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (scale_.first + (scale_.second - scale_.first) * random.uniform());
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * random.uniform());
    const auto w = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const auto h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const auto top = static_cast<int>(random.below(static_cast<std::uint64_t>(height - h + 1)));
      const auto left = static_cast<int>(random.below(static_cast<std::uint64_t>(width - w + 1)));
      return {top, left, h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_.first)
    h = std::max(1, static_cast<int>(std::lround(w / ratio_.first)));
  else if (in_ratio > ratio_.second)
    w = std::max(1, static_cast<int>(std::lround(h * ratio_.second)));
  return {(height - h) / 2, (width - w) / 2, h, w};
}

bool RandomResizedCrop::apply(const Image& in, Image& out, SampleRandom& random) const {
  const Window w = draw(in.shape.height, in.shape.width, random);
  resize_window(in, {w.top, w.left, w.height, w.width}, out, output_shape(in.shape));
  return true;
}

std::string RandomResizedCrop::name() const {
  return "RandomResizedCrop(" + std::to_string(size_) + ", scale=(" + std::to_string(scale_.first) +
         ", " + std::to_string(scale_.second) + "), ratio=(" + std::to_string(ratio_.first) + ", " +
         std::to_string(ratio_.second) + "))";
}

CenterCrop::CenterCrop(int height, int width) : height_(height), width_(width) {
  check_positive(height, "height", "CenterCrop");
  check_positive(width, "width", "CenterCrop");
}

ImageShape CenterCrop::output_shape(const ImageShape& in) const {
  return with_size(in, height_, width_);
}

bool CenterCrop::apply(const Image& in, Image& out, SampleRandom&) const {
  if (in.shape.height == height_ && in.shape.width == width_) return false;
  // torchvision: int(round((h - th) / 2)), rounding halves to even as Python does.
  const int top = static_cast<int>(std::nearbyint((in.shape.height - height_) / 2.0));
  const int left = static_cast<int>(std::nearbyint((in.shape.width - width_) / 2.0));
  crop_into(in, out, output_shape(in.shape), top, left, false);
  return true;
}

std::string CenterCrop::name() const {
  return "CenterCrop(" + std::to_string(height_) + "x" + std::to_string(width_) + ")";
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  FRUGAL_CHECK(p >= 0 && p <= 1,
               "RandomHorizontalFlip: p must be in [0, 1], got " + std::to_string(p));
}

bool RandomHorizontalFlip::apply(const Image& in, Image& out, SampleRandom& random) const {
  if (random.uniform() >= p_) return false;  // one draw either way, so later draws stay aligned
  crop_into(in, out, in.shape, 0, 0, true);
  return true;
}

std::string RandomHorizontalFlip::name() const {
  return "RandomHorizontalFlip(p=" + std::to_string(p_) + ")";
}

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
