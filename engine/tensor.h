// Tensor: frugal's n-dimensional array handle, named after libtorch's. Copying a Tensor
// copies the handle (both see the same data); views share storage; the storage goes back
// to the caching allocator when the last handle viewing it is gone. Math on tensors is in
// the free functions of engine/ops/*.h; the methods here forward to them.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "engine/device.h"
#include "engine/dtype.h"
#include "engine/scalar.h"
#include "engine/shape.h"
#include "engine/tensor_impl.h"

namespace frugal {

namespace autograd {
class Node;
}

// dtype, device and requires_grad of a new tensor: `zeros({2, 3}, kFloat64)`,
// `randn({4}, TensorOptions().requires_grad(true))`.
struct TensorOptions {
  ScalarType dtype_ = kFloat32;
  Device device_ = kCPU;
  bool requires_grad_ = false;

  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}   // NOLINT: implicit like libtorch
  TensorOptions(Device d) : device_(d) {}      // NOLINT
  TensorOptions(DeviceType d) : device_(d) {}  // NOLINT
  TensorOptions dtype(ScalarType t) const {
    auto o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r = true) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  // Handles sharing this TensorImpl (not views of the same storage).
  long use_count() const { return impl_.use_count(); }

  // --- Metadata ---
  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  std::int64_t size(std::int64_t dim) const;
  std::int64_t stride(std::int64_t dim) const;
  std::int64_t dim() const { return static_cast<std::int64_t>(impl_->sizes().size()); }
  std::int64_t numel() const { return impl_->numel(); }
  ScalarType dtype() const { return impl_->dtype(); }
  ScalarType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->storage()->device(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  // A CPU tensor in page-locked memory from the pinned allocator (see pin_memory()).
  bool is_pinned() const { return impl_->storage()->is_pinned(); }
  std::size_t element_size() const { return frugal::element_size(dtype()); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(); }
  std::int64_t storage_offset() const { return impl_->storage_offset(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  bool is_floating_point() const { return frugal::is_floating_point(dtype()); }
  // Whether the two share storage (one is a view of the other, or both of a third).
  bool is_alias_of(const Tensor& other) const;
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  std::string toString() const;  // "CPUFloatType"

  void* data_ptr() const { return impl_->data(); }
  // Typed pointer to the first element; a frugal::Error if T is not the tensor's dtype.
  template <class T>
  T* data_ptr() const;
  // The single element as T (converted); a frugal::Error unless numel() == 1.
  template <class T>
  T item() const;

  // --- Autograd (engine/autograd/) ---
  bool requires_grad() const;
  // Marks a leaf as needing gradients; floating-point dtypes only.
  Tensor& requires_grad_(bool requires_grad = true);
  Tensor& set_requires_grad(bool requires_grad) { return requires_grad_(requires_grad); }
  // The accumulated gradient of a leaf (undefined until a backward reaches it).
  const Tensor& grad() const;
  Tensor& mutable_grad();
  // Backpropagates from this tensor. `gradient` defaults to 1 for a one-element tensor.
  // Saved tensors are freed as the graph is consumed unless retain_graph.
  void backward(const Tensor& gradient = {}, bool retain_graph = false) const;
  Tensor detach() const;  // same storage, no history
  Tensor& detach_();
  bool is_leaf() const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  // Keeps the gradient of a non-leaf in grad() after backward.
  void retain_grad() const;
  bool retains_grad() const;
  // Calls hook(gradient) when the gradient of this tensor is computed; a defined return
  // value replaces the gradient. Returns a handle for remove_hook.
  unsigned register_hook(std::function<Tensor(const Tensor&)> hook) const;
  void remove_hook(unsigned handle) const;
  // The version counter shared by views of one storage; in-place ops bump it.
  std::uint32_t _version() const { return impl_->storage()->version(); }

  // --- Views (engine/ops/shape.h): no data copied ---
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;  // a view when the strides allow, else a copy
  Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
  Tensor t() const;
  Tensor permute(IntArrayRef dims) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor slice(std::int64_t dim, std::optional<std::int64_t> start = std::nullopt,
               std::optional<std::int64_t> end = std::nullopt, std::int64_t step = 1) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor operator[](std::int64_t index) const { return select(0, index); }
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor squeeze() const;
  Tensor squeeze(std::int64_t dim) const;
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  Tensor contiguous() const;  // this tensor itself when already contiguous

  // --- Copies and conversions (engine/ops/copy.h) ---
  Tensor clone() const;
  Tensor to(ScalarType dtype) const;  // this tensor itself when already of that dtype
  // To another device; this tensor itself when already there. non_blocking: a copy between
  // pinned host memory and a CUDA device is queued on the device's copy stream and returns at
  // once (the current stream waits for it; both blocks are record_stream'ed so neither is
  // reused before the copy is done). Otherwise the copy is complete on return.
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda(bool non_blocking = false) const { return to(Device(kCUDA), non_blocking); }
  // A copy in pinned (page-locked) host memory, for non_blocking copies to a device; this
  // tensor itself when already pinned. CPU tensors only.
  Tensor pin_memory() const;
  // Marks this tensor's storage as in use by work queued on CUDA stream `stream`: freed, its
  // block is reused only once that work has finished (a no-op on the CPU).
  void record_stream(std::uint64_t stream) const { impl_->storage()->record_stream(stream); }
  Tensor& copy_(const Tensor& src);
  Tensor& zero_();
  Tensor& fill_(Scalar value);

  // --- Elementwise (engine/ops/elementwise.h) ---
  Tensor add(const Tensor& other, Scalar alpha = 1) const;
  Tensor sub(const Tensor& other, Scalar alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor pow(Scalar exponent) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor& add_(const Tensor& other, Scalar alpha = 1);
  Tensor& add_(Scalar other);
  Tensor& sub_(const Tensor& other, Scalar alpha = 1);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(Scalar other);
  Tensor& div_(Scalar other);
  Tensor& relu_();

  // --- Reductions (engine/ops/reduce.h) ---
  Tensor sum() const;
  Tensor sum(IntArrayRef dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(IntArrayRef dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  Tensor argmax(std::int64_t dim, bool keepdim = false) const;
  Tensor var(IntArrayRef dims, bool unbiased = true, bool keepdim = false) const;
  Tensor softmax(std::int64_t dim) const;
  Tensor log_softmax(std::int64_t dim) const;

  // --- Linear algebra (engine/ops/matmul.h) ---
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Prints like PyTorch: the values, then "[ CPUFloatType{2,3} ]".
std::ostream& operator<<(std::ostream& out, const Tensor& t);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, Scalar b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, Scalar b);
Tensor& operator/=(Tensor& a, Scalar b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, Scalar b);

namespace detail {
[[noreturn]] void throw_dtype_mismatch(const char* what, ScalarType have, ScalarType want);
}

// The typed data of an optional tensor (an absent bias or weight): null when undefined.
template <class T>
T* data_ptr_or_null(const Tensor& t) {
  return t.defined() ? t.template data_ptr<T>() : nullptr;
}

template <class T>
T* Tensor::data_ptr() const {
  if (dtype() != scalar_type_of<T>()) [[unlikely]]
    detail::throw_dtype_mismatch("data_ptr", dtype(), scalar_type_of<T>());
  return static_cast<T*>(data_ptr());
}

}  // namespace frugal
