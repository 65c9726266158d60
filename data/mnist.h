// MNIST-family datasets (MNIST, Fashion-MNIST, KMNIST: same idx files, same names) loaded
// whole into memory as their uint8 pixels — a quarter of float32's bytes — and normalised
// to float32 one batch at a time, as the loader hands batches out.
#pragma once

#include <cstdint>
#include <string>

#include "engine/tensor.h"

namespace frugal::data {

enum class Split { Train, Test };

// Where Debian's dataset-fashion-mnist package puts the four .gz files.
inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Fashion-MNIST's pixel mean and standard deviation over its training set, after scaling
// to [0, 1]. (MNIST's are 0.1307 and 0.3081.)
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStd = 0.3530;
// Fashion-MNIST's ten classes in label order, as directory names.
inline constexpr const char* kFashionMnistClasses[10] = {
    "t-shirt", "trouser", "pullover", "dress", "coat",
    "sandal",  "shirt",   "sneaker",  "bag",   "ankle-boot"};

struct MnistDataset {
  Tensor pixels;  // uint8 [N, 1, H, W], as stored in the file
  Tensor labels;  // int64 [N]
  double mean = kFashionMnistMean, std = kFashionMnistStd;
  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
  // float32 (pixel / 255 - mean) / std of uint8 pixels of any shape (a batch, or all).
  Tensor normalize(const Tensor& pixels) const;
  // Images [start, start + count) normalised: what a model takes.
  Tensor images(std::int64_t start, std::int64_t count) const {
    return normalize(pixels.narrow(0, start, count));
  }
};

// Loads `train-images-idx3-ubyte` + `train-labels-idx1-ubyte` (Split::Train) or the
// `t10k-` pair (Split::Test) from dir, each plain or with `.gz`. Images must be uint8
// [N, H, W] and labels uint8 [N] with the same N; errors name the files.
MnistDataset load_mnist(const std::string& dir, Split split, double mean = kFashionMnistMean,
                        double std = kFashionMnistStd);

}  // namespace frugal::data
