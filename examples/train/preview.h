// frugal-train --preview: the first training batch as the model gets it (after decoding,
// augmentation and normalisation, which is undone for display), written as a PNG grid with
// each picture's class name under it.
#pragma once

#include <string>

#include "data/loader.h"
#include "examples/train/data_source.h"

namespace frugal::train {

struct PreviewResult {
  int images = 0, columns = 0, width = 0, height = 0;  // the grid and the PNG's size
};

// At most 64 images of `batch` (CPU, float32 [B, C, H, W]); errors name `path`.
PreviewResult write_preview(const std::string& path, const data::Batch& batch,
                            const DataInfo& info);

}  // namespace frugal::train
