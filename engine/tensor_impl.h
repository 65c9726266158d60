// TensorImpl: what a Tensor handle points to — a view (sizes, strides, offset, dtype) into a
// shared Storage, plus autograd's metadata for tensors that take part in a graph. Internal:
// users hold Tensor; ops and autograd read the fields directly.
#pragma once

#include <memory>

#include "engine/dtype.h"
#include "engine/shape.h"
#include "engine/storage.h"

namespace frugal {

namespace autograd {
struct AutogradMeta;
}

class TensorImpl {
 public:
  TensorImpl(std::shared_ptr<StorageImpl> storage, IntArrayRef sizes, IntArrayRef strides,
             std::int64_t storage_offset, ScalarType dtype);
  ~TensorImpl();

  const std::shared_ptr<StorageImpl>& storage() const { return storage_; }
  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  std::int64_t storage_offset() const { return storage_offset_; }
  std::int64_t numel() const { return numel_; }
  ScalarType dtype() const { return dtype_; }
  bool is_contiguous() const { return contiguous_; }
  // The first element (storage data + offset), in bytes.
  char* data() const {
    return static_cast<char*>(storage_->data()) +
           storage_offset_ * static_cast<std::int64_t>(element_size(dtype_));
  }

  // A view made by a view op (shares another tensor's storage); in-place ops that record
  // history refuse views, whose base would not see the change.
  bool is_view() const { return is_view_; }
  void set_is_view() { is_view_ = true; }
  // Made under InferenceMode: such a tensor may never be saved for backward.
  bool is_inference() const { return is_inference_; }

  autograd::AutogradMeta* autograd_meta() const { return autograd_.get(); }
  autograd::AutogradMeta& ensure_autograd_meta();

 private:
  std::shared_ptr<StorageImpl> storage_;
  DimVector sizes_;
  DimVector strides_;
  std::int64_t storage_offset_;
  std::int64_t numel_;
  ScalarType dtype_;
  bool contiguous_;
  bool is_view_ = false;
  bool is_inference_;
  std::unique_ptr<autograd::AutogradMeta> autograd_;
};

}  // namespace frugal
