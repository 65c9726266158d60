// Making tensors: empty, zeros, ones, full, arange, rand, randn, from values or a pointer,
// and the *_like variants. Every one takes its storage from the device's caching allocator.
#pragma once

#include <initializer_list>
#include <vector>

#include "engine/generator.h"
#include "engine/tensor.h"

namespace frugal {

Tensor empty(IntArrayRef sizes, TensorOptions options = {});
// A tensor with explicit strides over fresh storage large enough for them.
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options = {});
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
Tensor full(IntArrayRef sizes, Scalar value, TensorOptions options = {});
// [start, end) in steps of `step`; integer arguments give int64, others float32.
Tensor arange(Scalar end, TensorOptions options);
Tensor arange(Scalar start, Scalar end, Scalar step = 1);
Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options);
Tensor arange(Scalar end);
// Uniform in [0, 1) and standard normal, reproducible from the generator's seed.
Tensor rand(IntArrayRef sizes, TensorOptions options = {}, Generator* generator = nullptr);
Tensor randn(IntArrayRef sizes, TensorOptions options = {}, Generator* generator = nullptr);
// Uniform integers in [low, high).
Tensor randint(std::int64_t low, std::int64_t high, IntArrayRef sizes,
               TensorOptions options = kInt64, Generator* generator = nullptr);

// Copies values into a new tensor (1-d unless sizes are given). The dtype follows T.
template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes);
template <class T>
Tensor tensor(const std::vector<T>& values) {
  return tensor(values, {static_cast<std::int64_t>(values.size())});
}
Tensor tensor(std::initializer_list<float> values);
Tensor tensor(std::initializer_list<double> values, ScalarType dtype);
// Copies numel(sizes) elements of `dtype` from `data` into a new tensor. (Unlike libtorch's
// from_blob it copies: all of frugal's tensor storage comes from its allocator.)
Tensor from_data(const void* data, IntArrayRef sizes, ScalarType dtype);

Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar value);
Tensor rand_like(const Tensor& t, Generator* generator = nullptr);
Tensor randn_like(const Tensor& t, Generator* generator = nullptr);

// In-place random fills (used by initialisers): uniform [lo, hi) and normal(mean, std).
Tensor& uniform_(Tensor& t, double lo, double hi, Generator* generator = nullptr);
Tensor& normal_(Tensor& t, double mean, double std, Generator* generator = nullptr);

}  // namespace frugal
