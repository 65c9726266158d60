// The geometric transforms: Resize, RandomCrop, RandomResizedCrop, CenterCrop and
// RandomHorizontalFlip. Crops and flips move whole pixels (crop_into); resizes are bilinear.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "data/transforms.h"
#include "data/transforms_internal.h"

namespace frugal::data {

using detail::crop_into;
using detail::Strides;
using detail::strides_of;

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

ImageShape with_size(ImageShape s, int h, int w) {
  s.height = h;
  s.width = w;
  return s;
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

}  // namespace

namespace detail {

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

}  // namespace detail

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

}  // namespace frugal::data
