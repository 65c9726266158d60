// What the options make of an image on its way to the model: the training and evaluation
// steps torchvision's recipes use, and the normalisation, given or measured.
#include "examples/train/data_transforms.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/error.h"

namespace frugal::train {

std::string resolve_augment(const std::string& augment, int image_size) {
  if (augment == "auto")
    return image_size == 0 ? "none" : image_size >= 64 ? "resized-crop" : "pad-crop";
  if (augment != "none" && augment != "flip" && augment != "pad-crop" && augment != "resized-crop")
    throw ConfigError("--augment must be auto, none, flip, pad-crop or resized-crop, got '" +
                      augment + "'");
  if ((augment == "pad-crop" || augment == "resized-crop") && image_size == 0)
    throw ConfigError("--augment " + augment + " crops to --image-size N; give --image-size");
  return augment;
}

// Evaluation: the short side resized to N, then the central N x N (torchvision's Resize +
// CenterCrop); nothing without --image-size.
Steps eval_steps(int image_size) {
  if (image_size == 0) return {};
  return {std::make_shared<data::Resize>(image_size),
          std::make_shared<data::CenterCrop>(image_size)};
}

// Training, as torchvision's recipes: pad-crop is CIFAR's (the evaluation view, padded by an
// eighth a side and cropped at random, flipped half the time), resized-crop ImageNet's.
Steps train_steps(int image_size, const std::string& augment) {
  Steps steps;
  if (augment == "resized-crop") {
    steps.push_back(std::make_shared<data::RandomResizedCrop>(image_size));
  } else {
    steps = eval_steps(image_size);
    if (augment == "pad-crop")
      steps.push_back(std::make_shared<data::RandomCrop>(image_size, std::max(1, image_size / 8)));
  }
  if (augment != "none") steps.push_back(std::make_shared<data::RandomHorizontalFlip>());
  return steps;
}

data::Compose to_model(Steps steps, const Normalization& n) {
  steps.push_back(std::make_shared<data::ToTensor>());
  if (!n.mean.empty()) steps.push_back(std::make_shared<data::Normalize>(n.mean, n.std));
  return data::Compose(std::move(steps));
}

// "none", "M,S" or "M1,..,Mc,S1,..,Sc".
Normalization parse_normalize(const std::string& text, std::int64_t channels) {
  if (text == "none") return {{}, {}, "--normalize none (pixels in [0, 1])"};
  std::vector<float> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      values.push_back(std::stof(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw ConfigError("--normalize: '" + item + "' in '" + text + "' is not a number");
    }
  }
  const auto c = static_cast<std::size_t>(channels);
  if (values.size() != 2 && values.size() != 2 * c)
    throw ConfigError("--normalize takes MEAN,STD or " + std::to_string(c) + " means then " +
                      std::to_string(c) + " stds, got " + std::to_string(values.size()) +
                      " values in '" + text + "'");
  const std::size_t half = values.size() / 2;
  Normalization n{{values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half)},
                  {values.begin() + static_cast<std::ptrdiff_t>(half), values.end()},
                  "--normalize"};
  for (float s : n.std)
    if (!(s > 0)) throw ConfigError("--normalize: every std must be positive, got " + text);
  return n;
}

// Per-channel mean and std over every pixel of up to `max_samples` samples spread evenly over
// `d`, whose samples are CHW float32 in [0, 1] (the evaluation view before Normalize).
// Damage met here stops the run, or is passed over under skip_bad (the loader names and
// counts it when it meets the same file).
Normalization measure_normalization(const data::Dataset& d, bool skip_bad,
                                    std::int64_t max_samples) {
  const data::SampleSpec spec = d.spec();
  const std::int64_t channels = spec.data_sizes[0];
  std::int64_t pixels = 1;
  for (std::size_t i = 1; i < spec.data_sizes.size(); ++i) pixels *= spec.data_sizes[i];
  std::vector<float> sample(static_cast<std::size_t>(channels * pixels));
  std::int64_t target = 0;
  std::vector<double> sum(static_cast<std::size_t>(channels)),
      squares(static_cast<std::size_t>(channels));
  const std::int64_t n = d.size(), count = std::min(n, max_samples);
  std::int64_t used = 0;
  for (std::int64_t k = 0; k < count; ++k) {
    try {
      d.get(k * n / count, {sample.data(), &target, 0});
    } catch (const Error&) {
      if (!skip_bad) throw;
      continue;
    }
    ++used;
    for (std::int64_t c = 0; c < channels; ++c) {
      const float* p = sample.data() + c * pixels;
      double s = 0, q = 0;
      for (std::int64_t i = 0; i < pixels; ++i) {
        s += p[i];
        q += static_cast<double>(p[i]) * p[i];
      }
      sum[static_cast<std::size_t>(c)] += s;
      squares[static_cast<std::size_t>(c)] += q;
    }
  }
  FRUGAL_CHECK(used > 0, "--data: none of the " + std::to_string(count) +
                             " training images sampled for --normalize could be read");
  Normalization result;
  const double total = static_cast<double>(used) * static_cast<double>(pixels);
  for (std::size_t c = 0; c < sum.size(); ++c) {
    const double mean = sum[c] / total;
    const double var = std::max(0.0, squares[c] / total - mean * mean);
    result.mean.push_back(static_cast<float>(mean));
    result.std.push_back(static_cast<float>(std::max(std::sqrt(var), 1e-3)));
  }
  result.from = "computed from " + std::to_string(used) + " training images";
  return result;
}

// Mean and std of every pixel of the idx training set (uint8).
Normalization measure_idx(const data::MnistDataset& train) {
  const Tensor pixels = train.pixels.contiguous();
  const auto* p = pixels.data_ptr<std::uint8_t>();
  const std::int64_t n = pixels.numel();
  std::uint64_t sum = 0, squares = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    sum += p[i];
    squares += static_cast<std::uint64_t>(p[i]) * p[i];
  }
  const double mean = static_cast<double>(sum) / static_cast<double>(n) / 255.0;
  const double var =
      static_cast<double>(squares) / static_cast<double>(n) / (255.0 * 255.0) - mean * mean;
  return {{static_cast<float>(mean)},
          {static_cast<float>(std::sqrt(std::max(var, 1e-6)))},
          "computed from every training pixel"};
}

}  // namespace frugal::train
