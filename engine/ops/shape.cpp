// View ops and their backward.
#include "engine/ops/shape.h"

#include <algorithm>

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/ops/copy.h"
#include "engine/ops/factory.h"
#include "engine/ops/reduce.h"

namespace frugal {

using autograd::InputGrads;

namespace {

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, std::int64_t offset) {
  auto impl =
      std::make_shared<TensorImpl>(base.impl()->storage(), sizes, strides, offset, base.dtype());
  impl->set_is_view();
  return Tensor(std::move(impl));
}

// Records a view's backward: reshaping the gradient back to the input's sizes.
void record_reshape_like(Tensor& out, const Tensor& input, const char* name) {
  if (!autograd::needs_grad(input)) return;
  autograd::record(out, name, {input},
                   [sizes = DimVector(input.sizes())](const Tensor& g, InputGrads& gi) {
                     gi[0] = g.reshape(sizes);
                   });
}

}  // namespace

DimVector infer_size(IntArrayRef sizes, std::int64_t numel, const char* op) {
  DimVector out(sizes);
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t d = 0; d < out.size(); ++d) {
    if (out[d] == -1) {
      FRUGAL_CHECK(infer < 0, std::string(op) + ": only one dimension can be inferred, in " +
                                  shape_string(sizes));
      infer = static_cast<int>(d);
    } else {
      FRUGAL_CHECK(out[d] >= 0, std::string(op) + ": invalid size " + shape_string(sizes));
      known *= out[d];
    }
  }
  if (infer >= 0) {
    FRUGAL_CHECK(known != 0 && numel % known == 0,
                 std::string(op) + ": shape " + shape_string(sizes) +
                     " is invalid for input of size " + std::to_string(numel));
    out[static_cast<std::size_t>(infer)] = numel / known;
  } else {
    FRUGAL_CHECK(known == numel, std::string(op) + ": shape " + shape_string(sizes) +
                                     " is invalid for input of size " + std::to_string(numel));
  }
  return out;
}

std::optional<DimVector> view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                      IntArrayRef sizes) {
  if (old_sizes.empty()) return DimVector(sizes.size(), 1);
  const std::int64_t numel = shape_numel(old_sizes);
  if (numel == 0) return contiguous_strides(sizes);
  DimVector strides(sizes.size());
  // Walk chunks of old dims that are contiguous with one another; each chunk must be
  // covered exactly by a run of new dims.
  std::int64_t view_d = static_cast<std::int64_t>(sizes.size()) - 1;
  std::int64_t chunk_base_stride = old_strides[old_strides.size() - 1];
  std::int64_t tensor_numel = 1, view_numel = 1;
  for (std::int64_t d = static_cast<std::int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[static_cast<std::size_t>(d)];
    const bool chunk_ends = d == 0 || (old_sizes[static_cast<std::size_t>(d - 1)] != 1 &&
                                       old_strides[static_cast<std::size_t>(d - 1)] !=
                                           tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 &&
           (view_numel < tensor_numel || sizes[static_cast<std::size_t>(view_d)] == 1)) {
      strides[static_cast<std::size_t>(view_d)] = view_numel * chunk_base_stride;
      view_numel *= sizes[static_cast<std::size_t>(view_d)];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_base_stride = old_strides[static_cast<std::size_t>(d - 1)];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

Tensor Tensor::view(IntArrayRef sizes) const {
  const DimVector shape = infer_size(sizes, numel(), "view");
  auto strides = view_strides(this->sizes(), this->strides(), shape);
  FRUGAL_CHECK(strides.has_value(),
               "view: size " + shape_string(shape) + " is not compatible with the input's size " +
                   shape_string(this->sizes()) + " and stride " + shape_string(this->strides()) +
                   " (at least one dimension spans across two contiguous subspaces); use "
                   ".reshape(...) instead");
  Tensor out = make_view(*this, shape, *strides, storage_offset());
  record_reshape_like(out, *this, "view");
  return out;
}

Tensor Tensor::reshape(IntArrayRef sizes) const {
  const DimVector shape = infer_size(sizes, numel(), "reshape");
  if (view_strides(this->sizes(), this->strides(), shape)) return view(shape);
  return contiguous().view(shape);
}

Tensor Tensor::transpose(std::int64_t dim0, std::int64_t dim1) const {
  const int d0 = wrap_dim(dim0, dim(), "transpose"), d1 = wrap_dim(dim1, dim(), "transpose");
  DimVector sizes(this->sizes()), strides(this->strides());
  std::swap(sizes[d0], sizes[d1]);
  std::swap(strides[d0], strides[d1]);
  Tensor out = make_view(*this, sizes, strides, storage_offset());
  if (autograd::needs_grad(*this))
    autograd::record(out, "transpose", {*this},
                     [d0, d1](const Tensor& g, InputGrads& gi) { gi[0] = g.transpose(d0, d1); });
  return out;
}

Tensor Tensor::t() const {
  FRUGAL_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dimensions, but it has " +
                               std::to_string(dim()) + " (use transpose or permute)");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::permute(IntArrayRef dims) const {
  FRUGAL_CHECK(static_cast<std::int64_t>(dims.size()) == dim(),
               "permute: " + shape_string(dims) + " does not list the " + std::to_string(dim()) +
                   " dimensions of a tensor of shape " + shape_string(sizes()));
  DimVector sizes(dims.size()), strides(dims.size()), inverse(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const int d = wrap_dim(dims[i], dim(), "permute");
    FRUGAL_CHECK(!seen[static_cast<std::size_t>(d)],
                 "permute: dimension " + std::to_string(d) + " repeats in " + shape_string(dims));
    seen[static_cast<std::size_t>(d)] = true;
    sizes[i] = this->sizes()[static_cast<std::size_t>(d)];
    strides[i] = this->strides()[static_cast<std::size_t>(d)];
    inverse[static_cast<std::size_t>(d)] = static_cast<std::int64_t>(i);
  }
  Tensor out = make_view(*this, sizes, strides, storage_offset());
  if (autograd::needs_grad(*this))
    autograd::record(out, "permute", {*this},
                     [inverse](const Tensor& g, InputGrads& gi) { gi[0] = g.permute(inverse); });
  return out;
}

Tensor Tensor::slice(std::int64_t dim, std::optional<std::int64_t> start,
                     std::optional<std::int64_t> end, std::int64_t step) const {
  const int d = wrap_dim(dim, this->dim(), "slice");
  FRUGAL_CHECK(this->dim() > 0, "slice: cannot slice a 0-dim tensor");
  FRUGAL_CHECK(step > 0, "slice: step must be positive, got " + std::to_string(step));
  const std::int64_t n = sizes()[static_cast<std::size_t>(d)];
  // Python's rules: negative positions count from the end, out-of-range ones clamp.
  auto clamp_pos = [n](std::int64_t p) {
    return std::clamp(p < 0 ? p + n : p, std::int64_t{0}, n);
  };
  const std::int64_t b = clamp_pos(start.value_or(0));
  const std::int64_t e = std::max(b, clamp_pos(end.value_or(n)));
  DimVector sizes(this->sizes()), strides(this->strides());
  sizes[static_cast<std::size_t>(d)] = (e - b + step - 1) / step;
  strides[static_cast<std::size_t>(d)] *= step;
  Tensor out = make_view(*this, sizes, strides,
                         storage_offset() + b * this->strides()[static_cast<std::size_t>(d)]);
  if (autograd::needs_grad(*this))
    autograd::record(
        out, "slice", {*this},
        [input_sizes = DimVector(this->sizes()), d, b, e, step](const Tensor& g, InputGrads& gi) {
          Tensor grad = zeros(input_sizes, g.options());
          copy_data(grad.slice(d, b, e, step), g);
          gi[0] = std::move(grad);
        });
  return out;
}

Tensor Tensor::narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const {
  const int d = wrap_dim(dim, this->dim(), "narrow");
  const std::int64_t n = sizes()[static_cast<std::size_t>(d)];
  const std::int64_t s = start < 0 ? start + n : start;
  FRUGAL_CHECK(s >= 0 && length >= 0 && s + length <= n,
               "narrow: start " + std::to_string(start) + " and length " + std::to_string(length) +
                   " exceed dimension " + std::to_string(d) + " of size " + std::to_string(n));
  return slice(d, s, s + length);
}

Tensor Tensor::select(std::int64_t dim, std::int64_t index) const {
  FRUGAL_CHECK(this->dim() > 0, "select: cannot select from a 0-dim tensor");
  const int d = wrap_dim(dim, this->dim(), "select");
  const std::int64_t n = sizes()[static_cast<std::size_t>(d)];
  FRUGAL_CHECK(index >= -n && index < n, "select: index " + std::to_string(index) +
                                             " is out of range for dimension " + std::to_string(d) +
                                             " of size " + std::to_string(n));
  const std::int64_t i = index < 0 ? index + n : index;
  DimVector sizes(this->sizes()), strides(this->strides());
  sizes.erase(static_cast<std::size_t>(d));
  strides.erase(static_cast<std::size_t>(d));
  Tensor out = make_view(*this, sizes, strides,
                         storage_offset() + i * this->strides()[static_cast<std::size_t>(d)]);
  if (autograd::needs_grad(*this))
    autograd::record(
        out, "select", {*this},
        [input_sizes = DimVector(this->sizes()), d, i](const Tensor& g, InputGrads& gi) {
          Tensor grad = zeros(input_sizes, g.options());
          copy_data(grad.select(d, i), g);
          gi[0] = std::move(grad);
        });
  return out;
}

Tensor Tensor::expand(IntArrayRef sizes) const {
  FRUGAL_CHECK(static_cast<std::int64_t>(sizes.size()) >= dim(),
               "expand: the target " + shape_string(sizes) +
                   " has fewer dimensions than the "
                   "tensor's " +
                   shape_string(this->sizes()));
  const std::size_t lead = sizes.size() - static_cast<std::size_t>(dim());
  DimVector new_sizes(sizes), new_strides(sizes.size());
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (d < lead) {
      FRUGAL_CHECK(sizes[d] >= 0, "expand: -1 is not allowed in a new leading dimension, in " +
                                      shape_string(sizes));
      new_strides[d] = 0;
      continue;
    }
    const std::int64_t have = this->sizes()[d - lead];
    if (sizes[d] == -1) new_sizes[d] = have;
    FRUGAL_CHECK(new_sizes[d] == have || have == 1,
                 "expand: the size " + shape_string(this->sizes()) + " cannot be expanded to " +
                     shape_string(sizes) + " (dimension " + std::to_string(d) + ")");
    new_strides[d] = new_sizes[d] == have ? this->strides()[d - lead] : 0;
  }
  Tensor out = make_view(*this, new_sizes, new_strides, storage_offset());
  if (autograd::needs_grad(*this))
    autograd::record(out, "expand", {*this},
                     [input_sizes = DimVector(this->sizes())](const Tensor& g, InputGrads& gi) {
                       gi[0] = sum_to_size(g, input_sizes);
                     });
  return out;
}

Tensor Tensor::squeeze() const {
  DimVector sizes, strides;
  for (std::size_t d = 0; d < this->sizes().size(); ++d) {
    if (this->sizes()[d] == 1) continue;
    sizes.push_back(this->sizes()[d]);
    strides.push_back(this->strides()[d]);
  }
  Tensor out = make_view(*this, sizes, strides, storage_offset());
  record_reshape_like(out, *this, "squeeze");
  return out;
}

Tensor Tensor::squeeze(std::int64_t dim) const {
  const int d = wrap_dim(dim, this->dim(), "squeeze");
  if (this->dim() == 0 || sizes()[static_cast<std::size_t>(d)] != 1) return view(sizes());
  DimVector sizes(this->sizes()), strides(this->strides());
  sizes.erase(static_cast<std::size_t>(d));
  strides.erase(static_cast<std::size_t>(d));
  Tensor out = make_view(*this, sizes, strides, storage_offset());
  record_reshape_like(out, *this, "squeeze");
  return out;
}

Tensor Tensor::unsqueeze(std::int64_t dim) const {
  const int d = wrap_dim(dim, this->dim() + 1, "unsqueeze");
  DimVector sizes(this->sizes()), strides(this->strides());
  const auto at = static_cast<std::size_t>(d);
  const std::int64_t stride = at < strides.size() ? strides[at] * sizes[at] : 1;
  sizes.insert(at, 1);
  strides.insert(at, stride);
  Tensor out = make_view(*this, sizes, strides, storage_offset());
  record_reshape_like(out, *this, "unsqueeze");
  return out;
}

Tensor Tensor::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
  FRUGAL_CHECK(s <= e, "flatten: start_dim " + std::to_string(start_dim) + " comes after end_dim " +
                           std::to_string(end_dim));
  DimVector sizes;
  for (int d = 0; d < s; ++d) sizes.push_back(this->sizes()[static_cast<std::size_t>(d)]);
  std::int64_t merged = 1;
  for (int d = s; d <= e; ++d) merged *= this->sizes()[static_cast<std::size_t>(d)];
  sizes.push_back(merged);
  for (int d = e + 1; d < dim(); ++d) sizes.push_back(this->sizes()[static_cast<std::size_t>(d)]);
  return reshape(sizes);
}

Tensor sum_to_size(const Tensor& grad, IntArrayRef sizes) {
  if (grad.sizes() == sizes) return grad;
  const std::size_t lead = grad.sizes().size() - sizes.size();
  DimVector dims;
  for (std::size_t d = 0; d < grad.sizes().size(); ++d)
    if (d < lead || (sizes[d - lead] == 1 && grad.sizes()[d] != 1))
      dims.push_back(static_cast<std::int64_t>(d));
  Tensor summed = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return lead ? summed.reshape(sizes) : summed.view(sizes);
}

}  // namespace frugal
