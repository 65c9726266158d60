// Shape arithmetic shared by every op: numel, strides, broadcasting and dim wrapping.
#include "engine/shape.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "common/error.h"

namespace frugal {

bool IntArrayRef::operator==(IntArrayRef other) const {
  return size_ == other.size_ && std::equal(begin(), end(), other.begin());
}

DimVector::DimVector(std::size_t size, std::int64_t value) { resize(size, value); }

DimVector::DimVector(IntArrayRef values) {
  FRUGAL_CHECK(values.size() <= kMaxDims, "a tensor has at most " + std::to_string(kMaxDims) +
                                              " dimensions, got " + std::to_string(values.size()));
  std::copy(values.begin(), values.end(), data_);
  size_ = static_cast<std::uint8_t>(values.size());
}

void DimVector::push_back(std::int64_t v) {
  FRUGAL_CHECK(size_ < kMaxDims,
               "a tensor has at most " + std::to_string(kMaxDims) + " dimensions");
  data_[size_++] = v;
}

void DimVector::insert(std::size_t at, std::int64_t v) {
  push_back(0);
  std::copy_backward(data_ + at, data_ + size_ - 1, data_ + size_);
  data_[at] = v;
}

void DimVector::erase(std::size_t at) {
  std::copy(data_ + at + 1, data_ + size_, data_ + at);
  --size_;
}

void DimVector::resize(std::size_t size, std::int64_t value) {
  FRUGAL_CHECK(size <= kMaxDims, "a tensor has at most " + std::to_string(kMaxDims) +
                                     " dimensions, got " + std::to_string(size));
  for (std::size_t i = size_; i < size; ++i) data_[i] = value;
  size_ = static_cast<std::uint8_t>(size);
}

std::int64_t shape_numel(IntArrayRef sizes) {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (__builtin_mul_overflow(n, sizes[i], &n)) [[unlikely]] {
      // A later size of 0 still makes an empty tensor; otherwise the sizes came from a
      // damaged header or a mistake, and wrapping around would allocate the wrong size.
      for (std::size_t j = i + 1; j < sizes.size(); ++j)
        if (sizes[j] == 0) return 0;
      std::string text;
      for (auto s : sizes) text += (text.empty() ? "" : ", ") + std::to_string(s);
      throw Error("a tensor of sizes [" + text + "] has more elements than fit in 64 bits");
    }
  }
  return n;
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  std::int64_t stride = 1;
  bool overflowed = false;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    if (__builtin_mul_overflow(stride, std::max<std::int64_t>(sizes[i], 1), &stride)) [[unlikely]] {
      // Only an empty tensor (a size of 0, where no element is ever addressed) may have sizes
      // this large; its remaining strides stay at the largest value instead of wrapping.
      stride = std::numeric_limits<std::int64_t>::max();
      overflowed = true;
    }
  }
  // A tensor with elements whose strides overflow has more elements than 64 bits count:
  // shape_numel says so (and returns 0, without throwing, for an empty one).
  if (overflowed) (void)shape_numel(sizes);
  return strides;
}

std::string shape_string(IntArrayRef sizes) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << ']';
  return out.str();
}

int wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op) {
  const std::int64_t range = std::max<std::int64_t>(ndim, 1);  // a 0-dim tensor takes 0 and -1
  FRUGAL_CHECK(dim >= -range && dim < range,
               std::string(op) + ": dimension " + std::to_string(dim) + " is out of range for a " +
                   std::to_string(ndim) + "-d tensor (expected [" + std::to_string(-range) + ", " +
                   std::to_string(range - 1) + "])");
  return static_cast<int>(dim < 0 ? dim + range : dim);
}

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  const std::size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    FRUGAL_CHECK(da == db || da == 1 || db == 1,
                 std::string(op) + ": shapes " + shape_string(a) + " and " + shape_string(b) +
                     " cannot be broadcast together (dimension " + std::to_string(i) + ": " +
                     std::to_string(da) + " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace frugal
