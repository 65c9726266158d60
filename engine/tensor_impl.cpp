// TensorImpl construction: cached numel and contiguity, and the autograd part on demand.
#include "engine/tensor_impl.h"

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"

namespace frugal {

namespace {
bool strides_are_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  // An empty tensor is contiguous whatever its strides, as in libtorch; its sizes may be huge
  // (an idx header of [0, 2^31, 2^31]), and the product below must not overflow for them.
  for (auto s : sizes)
    if (s == 0) return true;
  std::int64_t expected = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;  // any stride is fine for a size-1 dim
    if (strides[i] != expected) return false;
    if (__builtin_mul_overflow(expected, sizes[i], &expected)) return false;
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
