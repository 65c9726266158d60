// TensorImpl construction: cached numel and contiguity, and the autograd part on demand.
#include "engine/tensor_impl.h"

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"

namespace frugal {

namespace {
bool strides_are_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  std::int64_t expected = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;  // any stride is fine for a size-1 dim
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}
}  // namespace

TensorImpl::TensorImpl(std::shared_ptr<StorageImpl> storage, IntArrayRef sizes, IntArrayRef strides,
                       std::int64_t storage_offset, ScalarType dtype)
    : storage_(std::move(storage)),
      sizes_(sizes),
      strides_(strides),
      storage_offset_(storage_offset),
      numel_(shape_numel(sizes)),
      dtype_(dtype),
      contiguous_(strides_are_contiguous(sizes, strides)),
      is_inference_(InferenceMode::is_enabled()) {}

TensorImpl::~TensorImpl() = default;

autograd::AutogradMeta& TensorImpl::ensure_autograd_meta() {
  if (!autograd_) autograd_ = std::make_unique<autograd::AutogradMeta>();
  return *autograd_;
}

}  // namespace frugal
