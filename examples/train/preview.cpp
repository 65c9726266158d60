// The preview grid: tiles scaled up by whole pixels (nearest) to at least 80 pixels a side
// so that 28x28 images can be seen, gray or RGB, captioned in a 5x7 font.
#include "examples/train/preview.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <vector>

#include "common/error.h"
#include "data/image_write.h"
#include "examples/train/preview_font.h"

namespace frugal::train {

namespace {

const Glyph& glyph(char c) {
  const char up = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const Glyph& g : kFont5x7)
    if (g.c == up) return g;
  for (const Glyph& g : kFont5x7)
    if (g.c == '?') return g;
  return kFont5x7[0];
}

// Writes `text` into the RGB canvas at (x, y), each font pixel `scale` canvas pixels,
// cut at `max_width` pixels.
void draw_text(std::vector<std::uint8_t>& canvas, int canvas_width, int x, int y,
               const std::string& text, int scale, int max_width) {
  const int advance = 6 * scale;
  const int fits = std::max(0, (max_width + scale) / advance);
  for (int i = 0; i < static_cast<int>(text.size()) && i < fits; ++i) {
    const Glyph& g = glyph(text[static_cast<std::size_t>(i)]);
    for (int r = 0; r < 7; ++r)
      for (int c = 0; c < 5; ++c) {
        if (g.rows[r][c] != '#') continue;
        for (int dy = 0; dy < scale; ++dy)
          for (int dx = 0; dx < scale; ++dx) {
            const std::size_t at = (static_cast<std::size_t>(y + r * scale + dy) * canvas_width +
                                    static_cast<std::size_t>(x + i * advance + c * scale + dx)) *
                                   3;
            canvas[at] = canvas[at + 1] = canvas[at + 2] = 235;
          }
      }
  }
}

}  // namespace

PreviewResult write_preview(const std::string& path, const data::Batch& batch,
                            const DataInfo& info) {
  const Tensor images = batch.data.to(kFloat32).contiguous();
  const Tensor labels = batch.target.to(kInt64).contiguous();
  FRUGAL_CHECK(images.dim() == 4 && images.device().is_cpu(),
               "--preview " + path + ": needs a CPU batch of [B, C, H, W] images, got " +
                   shape_string(images.sizes()));
  const int count = static_cast<int>(std::min<std::int64_t>(images.size(0), 64));
  const int C = static_cast<int>(images.size(1)), H = static_cast<int>(images.size(2)),
            W = static_cast<int>(images.size(3));
  FRUGAL_CHECK(count > 0, "--preview " + path + ": the first batch is empty");
  const int scale = std::max(1, (80 + std::max(H, W) - 1) / std::max(H, W));
  const int tile_w = W * scale, tile_h = H * scale;
  const int font = tile_w >= 160 ? 2 : 1, caption = 7 * font + 6, gap = 4;
  PreviewResult r;
  r.images = count;
  r.columns = std::min(count, 8);
  const int rows = (count + r.columns - 1) / r.columns;
  r.width = gap + r.columns * (tile_w + gap);
  r.height = gap + rows * (tile_h + caption + gap);
  std::vector<std::uint8_t> canvas(static_cast<std::size_t>(r.width) * r.height * 3, 40);
  const float* px = images.data_ptr<float>();
  const auto* label = labels.data_ptr<std::int64_t>();
  for (int i = 0; i < count; ++i) {
    const int x0 = gap + (i % r.columns) * (tile_w + gap);
    const int y0 = gap + (i / r.columns) * (tile_h + caption + gap);
    for (int y = 0; y < tile_h; ++y)
      for (int x = 0; x < tile_w; ++x) {
        std::uint8_t rgb[3];
        for (int k = 0; k < 3; ++k) {
          const int c = C == 1 ? 0 : std::min(k, C - 1);
          float v = px[((static_cast<std::size_t>(i) * C + c) * H + y / scale) * W + x / scale];
          if (!info.mean.empty()) {  // undo Normalize
            const std::size_t m = info.mean.size() == 1 ? 0 : static_cast<std::size_t>(c);
            v = v * info.std[m] + info.mean[m];
          }
          rgb[k] = static_cast<std::uint8_t>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f);
        }
        std::uint8_t* d =
            &canvas[(static_cast<std::size_t>(y0 + y) * r.width + static_cast<std::size_t>(x0 + x)) * 3];
        d[0] = rgb[0];
        d[1] = rgb[1];
        d[2] = rgb[2];
      }
    const std::int64_t l = label[i];
    const std::string name = l >= 0 && l < static_cast<std::int64_t>(info.classes.size())
                                 ? info.classes[static_cast<std::size_t>(l)]
                                 : std::to_string(l);
    draw_text(canvas, r.width, x0, y0 + tile_h + 3, name, font, tile_w);
  }
  data::write_png(path, r.height, r.width, 3, canvas.data());
  return r;
}

}  // namespace frugal::train
