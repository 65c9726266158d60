// What frugal-train says about its data: the split, the image geometry, the transforms and
// the normalisation, printed at the start of a run and written into --metrics-json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/train/data_source.h"

namespace frugal::train {

// Prints the split, images, transforms and normalize lines.
void print_data_info(const DataInfo& info, const DataSource& source, std::uint64_t seed);
// The split as a JSON object: kind, val_fraction (held out only), train and eval counts.
std::string split_json(const DataInfo& info, const DataSource& source);
// Floats as a JSON array, 6 significant digits (normalisation means and stds).
std::string float_list(const std::vector<float>& values);

}  // namespace frugal::train
