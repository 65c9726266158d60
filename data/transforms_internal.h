// What the transforms share inside data/: the element strides of either image layout and the
// window copy behind every crop and flip (transforms_geometry.cpp), which the fused steps reuse.
#pragma once

#include <cstddef>

#include "data/image.h"

namespace frugal::data::detail {

// Element (c, y, x) lives at c * cs + y * ys + x * xs in either layout.
struct Strides {
  std::size_t c, y, x;
};
inline Strides strides_of(const ImageShape& s) {
  const auto C = static_cast<std::size_t>(s.channels), H = static_cast<std::size_t>(s.height),
             W = static_cast<std::size_t>(s.width);
  if (s.layout == ImageLayout::HWC) return {1, W * C, C};
  return {H * W, W, 1};
}

// out = the window of `in` with top-left (top, left) and out_shape's size, zeros outside
// `in`, mirrored left-right when `flip`. Whole pixels move as bytes (one memcpy per row where
// nothing is mirrored), so it costs the same for uint8 and float, HWC and CHW.
void crop_into(const Image& in, Image& out, const ImageShape& out_shape, int top, int left,
               bool flip);

}  // namespace frugal::data::detail
