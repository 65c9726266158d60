// Every transform against hand-computed results: crops with padding, center crop, flips,
// bilinear resize, to-tensor, normalize, and composition in order with per-sample seeds.
#include <catch2/catch.hpp>

#include <set>

#include "data/transforms.h"

using namespace frugal;
using namespace frugal::data;
using Catch::Matchers::Contains;

namespace {

// A uint8 HWC image whose pixel (y, x, c) is 10 * y + x + 100 * c (small sizes only).
Image make(int h, int w, int c) {
  Image im;
  auto* p = static_cast<unsigned char*>(im.reset({h, w, c, false, ImageLayout::HWC}));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        p[(y * w + x) * c + k] = static_cast<unsigned char>(10 * y + x + 100 * k);
  return im;
}

int px(const Image& im, int y, int x, int c = 0) {
  const ImageShape& s = im.shape;
  if (s.layout == ImageLayout::HWC) return im.bytes()[(y * s.width + x) * s.channels + c];
  return im.bytes()[(c * s.height + y) * s.width + x];
}

float fx(const Image& im, int y, int x, int c = 0) {
  const ImageShape& s = im.shape;
  return static_cast<const float*>(im.pixels)[(c * s.height + y) * s.width + x];
}

Image run(const Transform& t, const Image& in, std::uint64_t seed = 1) {
  SampleRandom random(seed);
  Image out;
  if (!t.apply(in, out, random)) return in;
  return out;
}

}  // namespace

TEST_CASE("transforms: RandomCrop pads with zeros and covers every offset, uniformly") {
  const Image in = make(4, 5, 2);
  const RandomCrop crop(4, 5, 1);
  CHECK(crop.output_shape(in.shape) == ImageShape{4, 5, 2, false, ImageLayout::HWC});
  std::set<std::pair<int, int>> offsets;
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    const Image out = run(crop, in, seed);
    // Find the placement (source offset dy, dx) that explains every output pixel.
    int dy = -2, dx = -2;
    for (int oy : {-1, 0, 1})
      for (int ox : {-1, 0, 1}) {
        bool match = true;
        for (int y = 0; y < 4 && match; ++y)
          for (int x = 0; x < 5 && match; ++x)
            for (int c = 0; c < 2 && match; ++c) {
              const int sy = y + oy, sx = x + ox;
              const int want =
                  (sy < 0 || sy >= 4 || sx < 0 || sx >= 5) ? 0 : 10 * sy + sx + 100 * c;
              match = px(out, y, x, c) == want;
            }
        if (match) {
          dy = oy;
          dx = ox;
        }
      }
    REQUIRE(dy != -2);
    offsets.insert({dy, dx});
  }
  CHECK(offsets.size() == 9);  // all 3 x 3 placements occur
  CHECK_THROWS_WITH(RandomCrop(10, 10, 1).output_shape(in.shape),
                    Contains("smaller than the crop"));
  CHECK_THROWS(RandomCrop(4, 4, -1));
}

TEST_CASE("transforms: CenterCrop takes the middle and pads a small image") {
  const Image in = make(6, 7, 1);
  const Image out = run(CenterCrop(2, 3), in);
  REQUIRE(out.shape.height == 2);
  REQUIRE(out.shape.width == 3);
  // top = round((6 - 2) / 2) = 2, left = round((7 - 3) / 2) = 2
  CHECK(px(out, 0, 0) == 22);
  CHECK(px(out, 1, 2) == 34);
  const Image padded = run(CenterCrop(8, 7), in);  // one zero row above and below
  CHECK(px(padded, 0, 3) == 0);
  CHECK(px(padded, 1, 3) == 3);
  CHECK(px(padded, 7, 3) == 0);
  CHECK(run(CenterCrop(6, 7), in).pixels == in.pixels);  // same size: passes through
}

TEST_CASE("transforms: RandomHorizontalFlip mirrors rows with probability p") {
  const Image in = make(3, 4, 3);
  const Image flipped = run(RandomHorizontalFlip(1.0), in);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 3; ++c) CHECK(px(flipped, y, x, c) == px(in, y, 3 - x, c));
  CHECK(run(RandomHorizontalFlip(0.0), in).pixels == in.pixels);
  int flips = 0;
  for (std::uint64_t seed = 0; seed < 1000; ++seed)
    flips += run(RandomHorizontalFlip(0.5), in, seed).pixels != in.pixels;
  CHECK(flips > 430);
  CHECK(flips < 570);
  CHECK_THROWS(RandomHorizontalFlip(1.5));
}

TEST_CASE("transforms: Resize is bilinear with half-pixel centres, one size keeps the aspect") {
  Image in;
  auto* p = static_cast<unsigned char*>(in.reset({1, 2, 1, false, ImageLayout::HWC}));
  p[0] = 0;
  p[1] = 100;
  const Image up = run(Resize(1, 4), in);
  // Output x at source (x + 0.5) / 2 - 0.5 = -0.25 (clamped 0), 0.25, 0.75, 1.25 (clamped).
  CHECK(px(up, 0, 0) == 0);
  CHECK(px(up, 0, 1) == 25);
  CHECK(px(up, 0, 2) == 75);
  CHECK(px(up, 0, 3) == 100);
  const Image big = make(4, 8, 1);
  CHECK(Resize(2).output_shape(big.shape).height == 2);
  CHECK(Resize(2).output_shape(big.shape).width == 4);
  const Image half = run(Resize(2, 4), big);
  CHECK(px(half, 0, 0) == (0 + 1 + 10 + 11 + 2) / 4);  // the mean of the 2x2 block, rounded
  CHECK(run(Resize(4, 8), big).pixels == big.pixels);
}

TEST_CASE("transforms: ToTensor makes CHW floats in [0, 1]; Normalize standardises per channel") {
  const Image in = make(2, 3, 2);
  const Image t = run(ToTensor(), in);
  REQUIRE(t.shape == ImageShape{2, 3, 2, true, ImageLayout::CHW});
  CHECK(fx(t, 1, 2, 1) == Approx((10 + 2 + 100) / 255.0f));
  CHECK(fx(t, 0, 1, 0) == Approx(1 / 255.0f));
  const Image n = run(Normalize({0.5f, 0.25f}, {0.5f, 2.0f}), t);
  CHECK(fx(n, 1, 2, 1) == Approx(((10 + 2 + 100) / 255.0f - 0.25f) / 2.0f));
  CHECK(fx(n, 0, 1, 0) == Approx((1 / 255.0f - 0.5f) / 0.5f));
  CHECK_THROWS_WITH(Normalize({0.5f}, {0.5f}).output_shape(in.shape), Contains("ToTensor"));
  CHECK_THROWS_WITH(Normalize({0.1f, 0.2f, 0.3f}, {1, 1, 1}).output_shape(t.shape),
                    Contains("3 means"));
  CHECK_THROWS(Normalize({0.5f}, {0.0f}));
  // Crops and flips work on CHW floats too.
  const Image tf = run(RandomHorizontalFlip(1.0), t);
  CHECK(fx(tf, 1, 0, 1) == fx(t, 1, 2, 1));
}

TEST_CASE("transforms: Compose applies in order, and the same seed gives the same result") {
  const Image in = make(6, 6, 1);
  const Compose pipeline(
      {std::make_shared<RandomCrop>(6, 2), std::make_shared<RandomHorizontalFlip>(),
       std::make_shared<ToTensor>(),
       std::make_shared<Normalize>(std::vector<float>{0.5f}, std::vector<float>{0.5f})});
  CHECK(pipeline.output_shape(in.shape) == ImageShape{6, 6, 1, true, ImageLayout::CHW});
  CHECK_THAT(pipeline.str(), Contains("RandomCrop") && Contains("Normalize"));
  Image a1, b1, a2, b2;
  SampleRandom r1(77), r2(77);
  const Image& x = pipeline(in, a1, b1, r1);
  const std::vector<float> first(static_cast<const float*>(x.pixels),
                                 static_cast<const float*>(x.pixels) + 36);
  const Image& y = pipeline(in, a2, b2, r2);
  CHECK(std::vector<float>(static_cast<const float*>(y.pixels),
                           static_cast<const float*>(y.pixels) + 36) == first);
  bool differs = false;
  for (std::uint64_t s = 78; s < 90 && !differs; ++s) {
    SampleRandom r(s);
    const Image& z = pipeline(in, a2, b2, r);
    differs = std::vector<float>(static_cast<const float*>(z.pixels),
                                 static_cast<const float*>(z.pixels) + 36) != first;
  }
  CHECK(differs);
  // Order matters: Normalize before ToTensor is refused when the shapes are worked out.
  const Compose wrong(
      {std::make_shared<Normalize>(std::vector<float>{0.5f}, std::vector<float>{0.5f}),
       std::make_shared<ToTensor>()});
  CHECK_THROWS_WITH(wrong.output_shape(in.shape), Contains("ToTensor"));
}

TEST_CASE("transforms: write_chw lays HWC pixels out channel by channel") {
  const Image in = make(2, 2, 3);
  std::vector<unsigned char> out(12);
  write_chw(in, out.data());
  CHECK(out == std::vector<unsigned char>{0, 1, 10, 11, 100, 101, 110, 111, 200, 201, 210, 211});
}

TEST_CASE(
    "transforms: fused steps give what the transforms give one by one, straight into the slot") {
  Image in;
  auto* p = static_cast<unsigned char*>(in.reset({9, 7, 3, false, ImageLayout::HWC}));
  for (int i = 0; i < 9 * 7 * 3; ++i) p[i] = static_cast<unsigned char>(i * 37 % 251);
  auto crop = std::make_shared<RandomCrop>(8, 6, 2);
  auto flip = std::make_shared<RandomHorizontalFlip>();
  auto to_tensor = std::make_shared<ToTensor>();
  auto normalize = std::make_shared<Normalize>(std::vector<float>{0.1f, 0.2f, 0.3f},
                                               std::vector<float>{0.5f, 0.6f, 0.7f});
  const Compose fused({crop, flip, to_tensor, normalize});
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    // One by one, each on the output of the one before, with one generator.
    SampleRandom random(seed);
    Image a, b, c, d;
    const Image* x = &in;
    if (crop->apply(*x, a, random)) x = &a;
    if (flip->apply(*x, b, random)) x = &b;
    if (to_tensor->apply(*x, c, random)) x = &c;
    if (normalize->apply(*x, d, random)) x = &d;
    std::vector<float> slot(3 * 8 * 6, -99.0f);
    Image s1, s2;
    SampleRandom again(seed);
    fused.run_into(in, slot.data(), s1, s2, again);
    const float* want = static_cast<const float*>(x->pixels);
    for (std::size_t i = 0; i < slot.size(); ++i) REQUIRE(slot[i] == Approx(want[i]).margin(1e-5));
  }
  // Without ToTensor the uint8 HWC result is laid out CHW in the slot.
  const Compose geometric({crop, flip});
  std::vector<unsigned char> slot(3 * 8 * 6);
  Image s1, s2;
  SampleRandom r(3);
  geometric.run_into(in, slot.data(), s1, s2, r);
  SampleRandom r2(3);
  const Image& hwc = geometric(in, s1, s2, r2);
  std::vector<unsigned char> chw(slot.size());
  write_chw(hwc, chw.data());
  CHECK(slot == chw);
}

TEST_CASE("transforms: RandomResizedCrop draws windows inside the image within its scale and ratio") {
  const RandomResizedCrop crop(8, {0.25, 0.5}, {0.5, 2.0});
  for (std::uint64_t seed = 0; seed < 500; ++seed) {
    SampleRandom random(seed);
    const auto w = crop.draw(40, 30, random);
    INFO("seed " << seed << ": " << w.top << "," << w.left << " " << w.height << "x" << w.width);
    REQUIRE(w.top >= 0);
    REQUIRE(w.left >= 0);
    REQUIRE(w.top + w.height <= 40);
    REQUIRE(w.left + w.width <= 30);
    const double area = static_cast<double>(w.height) * w.width / (40.0 * 30.0);
    // Rounding each side to whole pixels moves the area by about a pixel's worth per side.
    CHECK(area >= 0.25 - 0.05);
    CHECK(area <= 0.5 + 0.05);
    const double ratio = static_cast<double>(w.width) / w.height;
    CHECK(ratio >= 0.5 * 0.85);
    CHECK(ratio <= 2.0 * 1.15);
  }
  // No window of the ratio range fits a very long image: the centred fallback, clamped.
  const RandomResizedCrop square(4, {0.99, 1.0}, {1.0, 1.0});
  SampleRandom random(3);
  const auto w = square.draw(10, 100, random);
  CHECK(w.height == 10);
  CHECK(w.width == 10);
  CHECK(w.left == 45);
}

TEST_CASE("transforms: RandomResizedCrop resamples its window to size x size, seeded") {
  const Image in = make(6, 6, 3);
  // The whole square image as the window: the same as Resize(3, 3).
  const RandomResizedCrop whole(3, {1.0, 1.0}, {1.0, 1.0});
  const Image a = run(whole, in, 7), b = run(Resize(3, 3), in);
  REQUIRE(a.shape == b.shape);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 3; ++x)
      for (int c = 0; c < 3; ++c) CHECK(px(a, y, x, c) == px(b, y, x, c));
  // Any window: same seed, same result; CHW float images too.
  const RandomResizedCrop crop(4);
  const Image c1 = run(crop, in, 11), c2 = run(crop, in, 11);
  CHECK(c1.shape == ImageShape{4, 4, 3, false, ImageLayout::HWC});
  CHECK(c1.storage == c2.storage);
  SampleRandom r(0);
  Image chw, out;
  ToTensor().apply(in, chw, r);
  const Image f = run(crop, chw, 11);
  CHECK(f.shape == ImageShape{4, 4, 3, true, ImageLayout::CHW});
  CHECK(std::abs(fx(f, 1, 2, 1) * 255.0f - static_cast<float>(px(c1, 1, 2, 1))) <= 0.51f);
  CHECK_THROWS_WITH(RandomResizedCrop(0), Contains("size must be positive"));
  CHECK_THROWS_WITH(RandomResizedCrop(4, {0.5, 0.2}), Contains("scale"));
  CHECK_THROWS_WITH(RandomResizedCrop(4, {0.1, 1.0}, {2.0, 1.0}), Contains("ratio"));
}
