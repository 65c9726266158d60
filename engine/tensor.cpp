// Tensor's own methods: metadata access, item(), and the autograd interface (grad,
// backward, detach, hooks). Math methods forward to the ops (tensor_methods.cpp).
#include "engine/tensor.h"

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/elementwise.h"

namespace frugal {

using autograd::AutogradMeta;

namespace detail {
void throw_dtype_mismatch(const char* what, ScalarType have, ScalarType want) {
  throw Error(std::string(what) + ": the tensor holds " + dtype_name(have) + ", not " +
              dtype_name(want));
}
}  // namespace detail

std::int64_t Tensor::size(std::int64_t d) const {
  return sizes()[static_cast<std::size_t>(wrap_dim(d, dim(), "size"))];
}

std::int64_t Tensor::stride(std::int64_t d) const {
  return strides()[static_cast<std::size_t>(wrap_dim(d, dim(), "stride"))];
}

bool Tensor::is_alias_of(const Tensor& other) const {
  return defined() && other.defined() && impl_->storage() == other.impl_->storage();
}

std::string Tensor::toString() const {
  return std::string(device().is_cpu() ? "CPU" : "CUDA") + dtype_type_name(dtype()) + "Type";
}

template <class T>
T Tensor::item() const {
  FRUGAL_CHECK(defined(), "item: the tensor is undefined");
  FRUGAL_CHECK(numel() == 1, "item: a tensor with " + std::to_string(numel()) +
                                 " elements cannot be converted to a scalar");
  if (!is_cpu()) return cpu().item<T>();  // waits for the kernels that compute it
  return dispatch_all(dtype(), "item", [&]<class S>() {
    const S v = *static_cast<const S*>(data_ptr());
    if constexpr (std::is_same_v<T, S>)
      return v;
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return T(static_cast<float>(v));
    else
      return static_cast<T>(static_cast<compute_t<S>>(v));
  });
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template Half Tensor::item<Half>() const;
template BFloat16 Tensor::item<BFloat16>() const;
template std::int32_t Tensor::item<std::int32_t>() const;
template std::int64_t Tensor::item<std::int64_t>() const;
template std::uint8_t Tensor::item<std::uint8_t>() const;
template bool Tensor::item<bool>() const;

// --- Autograd ---

bool Tensor::requires_grad() const {
  const AutogradMeta* meta = impl_->autograd_meta();
  return meta && (meta->requires_grad || meta->grad_fn);
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  AutogradMeta* meta = impl_->autograd_meta();
  FRUGAL_CHECK(!(meta && meta->grad_fn),
               "requires_grad_: only leaf tensors can change requires_grad; this one is the "
               "output of " +
                   std::string(meta && meta->grad_fn ? meta->grad_fn->name() : "an op") +
                   " (use detach() to get a new leaf)");
  FRUGAL_CHECK(!requires_grad || is_floating_point(),
               std::string("requires_grad_: only floating-point tensors can require gradients, "
                           "this one is ") +
                   dtype_name(dtype()));
  if (requires_grad || meta) impl_->ensure_autograd_meta().requires_grad = requires_grad;
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  const AutogradMeta* meta = impl_->autograd_meta();
  return meta ? meta->grad : undefined;
}

Tensor& Tensor::mutable_grad() { return impl_->ensure_autograd_meta().grad; }

bool Tensor::is_leaf() const {
  const AutogradMeta* meta = impl_->autograd_meta();
  return !meta || !meta->grad_fn;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  const AutogradMeta* meta = impl_->autograd_meta();
  return meta ? meta->grad_fn : none;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::run_backward(*this, gradient, retain_graph);
}

Tensor Tensor::detach() const {
  return Tensor(std::make_shared<TensorImpl>(impl_->storage(), sizes(), strides(), storage_offset(),
                                             dtype()));
}

Tensor& Tensor::detach_() {
  if (AutogradMeta* meta = impl_->autograd_meta()) {
    meta->grad_fn = nullptr;
    meta->requires_grad = false;
  }
  return *this;
}

void Tensor::retain_grad() const {
  FRUGAL_CHECK(requires_grad(), "retain_grad: the tensor does not require grad");
  AutogradMeta& meta = impl_->ensure_autograd_meta();
  if (!meta.grad_fn || meta.retains_grad) return;  // leaves keep their grad anyway
  meta.retains_grad = true;
  // The hook lives on the node, which the tensor owns: hold the tensor weakly.
  std::weak_ptr<TensorImpl> weak = impl_;
  meta.grad_fn->add_pre_hook([weak](const Tensor& g) {
    if (auto impl = weak.lock()) {
      Tensor& grad = impl->ensure_autograd_meta().grad;
      grad = grad.defined() ? frugal::add(grad, g) : g.clone();
    }
    return Tensor();
  });
}

bool Tensor::retains_grad() const {
  const AutogradMeta* meta = impl_->autograd_meta();
  return meta && meta->retains_grad;
}

unsigned Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  FRUGAL_CHECK(requires_grad(),
               "register_hook: cannot register a hook on a tensor that does "
               "not require gradient");
  AutogradMeta& meta = impl_->ensure_autograd_meta();
  if (meta.grad_fn) return meta.grad_fn->add_pre_hook(std::move(hook));
  static unsigned next_leaf_handle = 1u << 31;  // apart from node hook handles
  const unsigned handle = next_leaf_handle++;
  meta.hooks.emplace_back(handle, std::move(hook));
  return handle;
}

void Tensor::remove_hook(unsigned handle) const {
  AutogradMeta* meta = impl_->autograd_meta();
  if (!meta) return;
  if (meta->grad_fn) meta->grad_fn->remove_pre_hook(handle);
  std::erase_if(meta->hooks, [handle](const auto& h) { return h.first == handle; });
}

}  // namespace frugal
