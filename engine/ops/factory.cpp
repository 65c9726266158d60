// Tensor factories. Fresh storage is never zeroed unless asked (empty), like PyTorch.
#include "engine/ops/factory.h"

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "engine/dispatch.h"
#include "engine/ops/copy.h"
#include "engine/ops/device_copy.h"
#include "engine/ops/kernels.h"

namespace frugal {

Generator& default_generator() {
  static Generator generator;
  return generator;
}

void manual_seed(std::uint64_t seed) { default_generator().manual_seed(seed); }

namespace {

void check_sizes(IntArrayRef sizes, const char* op) {
  for (auto s : sizes)
    FRUGAL_CHECK(s >= 0, std::string(op) + ": negative dimension in size " + shape_string(sizes));
}

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad_) t.requires_grad_(true);
  return t;
}

}  // namespace

Tensor empty(IntArrayRef sizes, TensorOptions options) {
  check_sizes(sizes, "empty");
  const auto numel = static_cast<std::size_t>(shape_numel(sizes));
  auto storage =
      std::make_shared<StorageImpl>(numel * element_size(options.dtype_), options.device_);
  return finish(Tensor(std::make_shared<TensorImpl>(std::move(storage), sizes,
                                                    contiguous_strides(sizes), 0, options.dtype_)),
                options);
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  check_sizes(sizes, "empty_strided");
  FRUGAL_CHECK(sizes.size() == strides.size(), "empty_strided: " + std::to_string(sizes.size()) +
                                                   " sizes but " + std::to_string(strides.size()) +
                                                   " strides");
  std::int64_t span = shape_numel(sizes) == 0 ? 0 : 1;
  for (std::size_t d = 0; d < sizes.size() && span; ++d) {
    FRUGAL_CHECK(strides[d] >= 0, "empty_strided: negative stride in " + shape_string(strides));
    span += (sizes[d] - 1) * strides[d];
  }
  auto storage = std::make_shared<StorageImpl>(
      static_cast<std::size_t>(span) * element_size(options.dtype_), options.device_);
  return finish(
      Tensor(std::make_shared<TensorImpl>(std::move(storage), sizes, strides, 0, options.dtype_)),
      options);
}

Tensor zeros(IntArrayRef sizes, TensorOptions options) {
  Tensor t = empty(sizes, options.requires_grad(false));
  if (t.is_cpu())
    std::memset(t.data_ptr(), 0, t.nbytes());  // all-zero bytes are 0 in every dtype
  else
    t.zero_();
  return finish(t, options);
}

Tensor ones(IntArrayRef sizes, TensorOptions options) { return full(sizes, 1, options); }

Tensor full(IntArrayRef sizes, Scalar value, TensorOptions options) {
  Tensor t = empty(sizes, options.requires_grad(false));
  t.fill_(value);
  return finish(t, options);
}

Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options) {
  const double s = step.to_double();
  FRUGAL_CHECK(s != 0, "arange: step must be nonzero");
  const double n_real = std::ceil((end.to_double() - start.to_double()) / s);
  FRUGAL_CHECK(std::isfinite(n_real), "arange: the range is not finite");
  const auto n = static_cast<std::int64_t>(std::max(0.0, n_real));
  if (!options.device_.is_cpu())  // a host loop fills it; then one copy
    return finish(
        move_to_device(arange(start, end, step, options.device(kCPU).requires_grad(false)),
                       options.device_),
        options);
  Tensor t = empty({n}, options.requires_grad(false));
  dispatch_numeric(options.dtype_, "arange", [&]<class T>() {
    T* p = t.data_ptr<T>();
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<T>)
        p[i] = static_cast<T>(start.to_long() + i * step.to_long());
      else
        p[i] = static_cast<T>(
            static_cast<compute_t<T>>(start.to_double() + static_cast<double>(i) * s));
    }
  });
  return finish(t, options);
}

Tensor arange(Scalar start, Scalar end, Scalar step) {
  const bool integral = start.is_integral() && end.is_integral() && step.is_integral();
  return arange(start, end, step, integral ? kInt64 : kFloat32);
}

Tensor arange(Scalar end, TensorOptions options) { return arange(0, end, 1, options); }
Tensor arange(Scalar end) { return arange(0, end, 1); }

Tensor& uniform_(Tensor& t, double lo, double hi, Generator* generator) {
  FRUGAL_CHECK(lo <= hi, "uniform_: expects lo <= hi, got lo=" + std::to_string(lo) +
                             " and hi=" + std::to_string(hi));
  Generator& gen = generator ? *generator : default_generator();
  Tensor dense = t.is_contiguous() ? t : empty(t.sizes(), t.options());
  const std::uint64_t offset = gen.reserve(kernels::cpu::random_blocks(t.numel()));
  dispatch_floating(t.dtype(), "uniform_", [&]<class T>() {
    FRUGAL_KERNEL(t.device(), uniform<T>)
    (dense.data_ptr<T>(), t.numel(), gen.seed(), offset, lo, hi);
  });
  if (!t.is_contiguous()) t.copy_(dense);
  t.impl()->storage()->bump_version();
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* generator) {
  FRUGAL_CHECK(std >= 0, "normal_: expects std >= 0, got " + std::to_string(std));
  Generator& gen = generator ? *generator : default_generator();
  Tensor dense = t.is_contiguous() ? t : empty(t.sizes(), t.options());
  const std::uint64_t offset = gen.reserve(kernels::cpu::random_blocks(t.numel()));
  dispatch_floating(t.dtype(), "normal_", [&]<class T>() {
    FRUGAL_KERNEL(t.device(), normal<T>)
    (dense.data_ptr<T>(), t.numel(), gen.seed(), offset, mean, std);
  });
  if (!t.is_contiguous()) t.copy_(dense);
  t.impl()->storage()->bump_version();
  return t;
}

Tensor rand(IntArrayRef sizes, TensorOptions options, Generator* generator) {
  Tensor t = empty(sizes, options.requires_grad(false));
  uniform_(t, 0.0, 1.0, generator);
  return finish(t, options);
}

Tensor randn(IntArrayRef sizes, TensorOptions options, Generator* generator) {
  Tensor t = empty(sizes, options.requires_grad(false));
  normal_(t, 0.0, 1.0, generator);
  return finish(t, options);
}

Tensor randint(std::int64_t low, std::int64_t high, IntArrayRef sizes, TensorOptions options,
               Generator* generator) {
  FRUGAL_CHECK(low < high, "randint: expects low < high, got low=" + std::to_string(low) +
                               " and high=" + std::to_string(high));
  if (!options.device_.is_cpu())  // drawn on the host (the same numbers), then one copy
    return move_to_device(randint(low, high, sizes, options.device(kCPU), generator),
                          options.device_);
  Tensor u = rand(sizes, kFloat64, generator);
  Tensor t = empty(sizes, options.requires_grad(false));
  const double* src = u.data_ptr<double>();
  const double span = static_cast<double>(high - low);
  dispatch_numeric(options.dtype_, "randint", [&]<class T>() {
    T* p = t.data_ptr<T>();
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const auto v = std::min(high - 1, low + static_cast<std::int64_t>(src[i] * span));
      p[i] = static_cast<T>(static_cast<compute_t<T>>(v));
    }
  });
  return t;
}

template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes) {
  FRUGAL_CHECK(shape_numel(sizes) == static_cast<std::int64_t>(values.size()),
               "tensor: " + std::to_string(values.size()) + " values do not fill shape " +
                   shape_string(sizes));
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<std::uint8_t> bytes(values.begin(), values.end());
    return from_data(bytes.data(), sizes, kBool);
  } else {
    return from_data(values.data(), sizes, scalar_type_of<T>());
  }
}
template Tensor tensor<float>(const std::vector<float>&, IntArrayRef);
template Tensor tensor<double>(const std::vector<double>&, IntArrayRef);
template Tensor tensor<Half>(const std::vector<Half>&, IntArrayRef);
template Tensor tensor<BFloat16>(const std::vector<BFloat16>&, IntArrayRef);
template Tensor tensor<std::int32_t>(const std::vector<std::int32_t>&, IntArrayRef);
template Tensor tensor<std::int64_t>(const std::vector<std::int64_t>&, IntArrayRef);
template Tensor tensor<std::uint8_t>(const std::vector<std::uint8_t>&, IntArrayRef);
template Tensor tensor<bool>(const std::vector<bool>&, IntArrayRef);

Tensor tensor(std::initializer_list<float> values) { return tensor(std::vector<float>(values)); }

Tensor tensor(std::initializer_list<double> values, ScalarType dtype) {
  return tensor(std::vector<double>(values)).to(dtype);
}

Tensor from_data(const void* data, IntArrayRef sizes, ScalarType dtype) {
  Tensor t = empty(sizes, dtype);
  if (t.nbytes()) std::memcpy(t.data_ptr(), data, t.nbytes());
  return t;
}

Tensor empty_like(const Tensor& t) { return empty(t.sizes(), t.options()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), t.options()); }
Tensor ones_like(const Tensor& t) { return ones(t.sizes(), t.options()); }
Tensor full_like(const Tensor& t, Scalar value) { return full(t.sizes(), value, t.options()); }
Tensor rand_like(const Tensor& t, Generator* g) { return rand(t.sizes(), t.options(), g); }
Tensor randn_like(const Tensor& t, Generator* g) { return randn(t.sizes(), t.options(), g); }

}  // namespace frugal
