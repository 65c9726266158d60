// TensorImageDataset: each image is read in place from the tensor (a borrowed CHW image).
#include "data/tensor_image_dataset.h"

#include "common/error.h"
#include "data/image_folder.h"

namespace frugal::data {

TensorImageDataset::TensorImageDataset(Tensor images, Tensor labels, Compose transform)
    : transform_(std::move(transform)) {
  FRUGAL_CHECK(images.defined() && labels.defined(),
               "TensorImageDataset: images and labels must be defined");
  FRUGAL_CHECK(images.is_cpu() && labels.is_cpu(),
               "TensorImageDataset: images and labels must be CPU tensors");
  FRUGAL_CHECK(images.dtype() == kUInt8, "TensorImageDataset: images must be uint8, got " +
                                             std::string(dtype_name(images.dtype())));
  FRUGAL_CHECK(images.dim() == 3 || images.dim() == 4,
               "TensorImageDataset: images must be [N, H, W] or [N, C, H, W], got " +
                   shape_string(images.sizes()));
  FRUGAL_CHECK(labels.dim() == 1 && labels.size(0) == images.size(0),
               "TensorImageDataset: labels " + shape_string(labels.sizes()) +
                   " do not match images " + shape_string(images.sizes()));
  images_ = images.contiguous();
  labels_ = labels.to(kInt64).contiguous();
  const bool has_c = images_.dim() == 4;
  stored_ = ImageShape{static_cast<int>(images_.size(has_c ? 2 : 1)),
                       static_cast<int>(images_.size(has_c ? 3 : 2)),
                       has_c ? static_cast<int>(images_.size(1)) : 1, false, ImageLayout::CHW};
  FRUGAL_CHECK(
      stored_.channels >= 1 && stored_.channels <= 4,
      "TensorImageDataset: images need 1 to 4 channels, got " + std::to_string(stored_.channels));
  shape_ = transform_.output_shape(stored_);
  spec_ = image_sample_spec(shape_);
}

void TensorImageDataset::get(std::int64_t index, const SampleSlot& slot) const {
  FRUGAL_CHECK(index >= 0 && index < size(), "TensorImageDataset: index " + std::to_string(index) +
                                                 " out of range for " + std::to_string(size()) +
                                                 " images");
  Image image;
  image.borrow(stored_, images_.data_ptr<std::uint8_t>() +
                            static_cast<std::size_t>(index) * stored_.nbytes());
  transform_into_slot(image, transform_, shape_, labels_.data_ptr<std::int64_t>()[index], slot,
                      *this, index);
}

}  // namespace frugal::data
