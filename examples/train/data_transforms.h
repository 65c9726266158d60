// What frugal-train's --image-size, --augment and --normalize make of an image on its way to
// the model: torchvision's evaluation and training recipes as transform steps, and the
// normalisation, parsed from the option or measured over training images.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/mnist.h"
#include "data/transforms.h"

namespace frugal::train {

using Steps = std::vector<data::TransformPtr>;

// `augment` checked, and "auto" resolved: none without an image size, resized-crop from 64
// pixels up, pad-crop below. A crop without --image-size is a ConfigError.
std::string resolve_augment(const std::string& augment, int image_size);
// Resize(N) then CenterCrop(N); nothing for image_size 0.
Steps eval_steps(int image_size);
// The evaluation steps with the training augmentation (pad-crop, flip) or RandomResizedCrop.
Steps train_steps(int image_size, const std::string& augment);

// Per-channel mean and std (empty: no Normalize), and where they came from, for the log.
struct Normalization {
  std::vector<float> mean, std;
  std::string from;
};
// `steps`, then ToTensor and (unless `n` is empty) Normalize.
data::Compose to_model(Steps steps, const Normalization& n);
// --normalize: "none", "MEAN,STD" or C means then C stds; a ConfigError naming the value.
Normalization parse_normalize(const std::string& text, std::int64_t channels);
// Over every pixel of up to `max_samples` samples spread over `d` (CHW float32 in [0, 1]).
Normalization measure_normalization(const data::Dataset& d, bool skip_bad,
                                    std::int64_t max_samples);
// Over every pixel of the idx training set.
Normalization measure_idx(const data::MnistDataset& train);

}  // namespace frugal::train
