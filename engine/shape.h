// Shapes and strides: DimVector, a fixed-capacity vector of up to kMaxDims sizes that lives
// inside the tensor (no heap), and IntArrayRef, a non-owning view that braced lists,
// vectors and DimVectors all convert to, as in libtorch (`x.view({2, -1})`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace frugal {

inline constexpr int kMaxDims = 8;

class IntArrayRef {
 public:
  IntArrayRef() = default;
  IntArrayRef(const std::int64_t* data, std::size_t size) : data_(data), size_(size) {}
  // Like libtorch's: valid while the braced list lives, i.e. for the call it is passed to.
#if defined(__GNUC__) && !defined(__clang__)  // (a GCC warning that clang does not know)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  IntArrayRef(std::initializer_list<std::int64_t> list)  // NOLINT: implicit, like libtorch
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  IntArrayRef(const std::vector<std::int64_t>& v)  // NOLINT
      : data_(v.data()), size_(v.size()) {}

  const std::int64_t* begin() const { return data_; }
  const std::int64_t* end() const { return data_ + size_; }
  const std::int64_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::int64_t operator[](std::size_t i) const { return data_[i]; }
  std::int64_t back() const { return data_[size_ - 1]; }
  std::vector<std::int64_t> vec() const { return {begin(), end()}; }
  bool operator==(IntArrayRef other) const;

 private:
  const std::int64_t* data_ = nullptr;
  std::size_t size_ = 0;
};

class DimVector {
 public:
  DimVector() = default;
  explicit DimVector(std::size_t size, std::int64_t value = 0);
  DimVector(IntArrayRef values);  // NOLINT: implicit; throws frugal::Error past kMaxDims
  DimVector(std::initializer_list<std::int64_t> list) : DimVector(IntArrayRef(list)) {}

  operator IntArrayRef() const { return {data_, size_}; }  // NOLINT
  std::int64_t* begin() { return data_; }
  std::int64_t* end() { return data_ + size_; }
  const std::int64_t* begin() const { return data_; }
  const std::int64_t* end() const { return data_ + size_; }
  const std::int64_t* data() const { return data_; }
  std::int64_t* data() { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::int64_t& operator[](std::size_t i) { return data_[i]; }
  std::int64_t operator[](std::size_t i) const { return data_[i]; }
  std::int64_t& back() { return data_[size_ - 1]; }
  void push_back(std::int64_t v);
  void insert(std::size_t at, std::int64_t v);
  void erase(std::size_t at);
  void resize(std::size_t size, std::int64_t value = 0);
  bool operator==(const DimVector& other) const { return IntArrayRef(*this) == IntArrayRef(other); }

 private:
  std::int64_t data_[kMaxDims] = {};
  std::uint8_t size_ = 0;
};

// Product of the sizes (1 for a 0-dim shape).
std::int64_t shape_numel(IntArrayRef sizes);
// Row-major strides of a contiguous tensor of these sizes.
DimVector contiguous_strides(IntArrayRef sizes);
// "[2, 3, 4]"
std::string shape_string(IntArrayRef sizes);
// Wraps a possibly negative dim into [0, ndim); `op` names the caller in the error.
int wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op);
// The broadcast of two shapes (NumPy rules), or a frugal::Error naming `op` and both.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

}  // namespace frugal
