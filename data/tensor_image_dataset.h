// TensorImageDataset: images already in memory as one uint8 tensor [N, C, H, W] (the idx data
// sets, loaded whole) served through the same transforms as files, so a DataLoader can put
// workers, augmentation and pinned batches on them too.
#pragma once

#include "data/dataset.h"
#include "data/transforms.h"
#include "engine/tensor.h"

namespace frugal::data {

class TensorImageDataset : public Dataset {
 public:
  // images: uint8 [N, C, H, W] or [N, H, W] on the CPU; labels: int64 [N].
  TensorImageDataset(Tensor images, Tensor labels, Compose transform = {});
  std::int64_t size() const override { return labels_.size(0); }
  SampleSpec spec() const override { return spec_; }
  void get(std::int64_t index, const SampleSlot& slot) const override;
  std::string source(std::int64_t index) const override {
    return "image " + std::to_string(index) + " of the tensor";
  }

 private:
  Tensor images_, labels_;
  Compose transform_;
  ImageShape stored_;  // one image as stored (CHW uint8)
  ImageShape shape_;   // after the transforms
  SampleSpec spec_;
};

}  // namespace frugal::data
