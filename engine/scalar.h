// Scalar: a number passed to an op (fill_, full, x + 2.5), kept as a double or an int64 so
// that neither precision nor the int/float distinction is lost before the op sees it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/half.h"

namespace frugal {

class Scalar {
 public:
  Scalar() : Scalar(0) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Scalar(T v)
      : is_integral_(true),
        is_bool_(std::is_same_v<T, bool>),
        i_(static_cast<std::int64_t>(v)) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : is_integral_(false), d_(static_cast<double>(v)) {}  // NOLINT
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}                 // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}             // NOLINT

  bool is_integral() const { return is_integral_; }
  bool is_floating_point() const { return !is_integral_; }
  bool is_bool() const { return is_bool_; }
  double to_double() const { return is_integral_ ? static_cast<double>(i_) : d_; }
  std::int64_t to_long() const { return is_integral_ ? i_ : static_cast<std::int64_t>(d_); }
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>)
      return is_integral_ ? i_ != 0 : d_ != 0.0;
    else if constexpr (std::is_integral_v<T>)
      return static_cast<T>(to_long());
    else
      return static_cast<T>(static_cast<float>(to_double()));
  }

 private:
  bool is_integral_;
  bool is_bool_ = false;
  std::int64_t i_ = 0;
  double d_ = 0.0;
};

template <>
inline double Scalar::to<double>() const {
  return to_double();
}

}  // namespace frugal
