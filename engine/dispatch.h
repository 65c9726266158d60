// Dispatch by element type: calls a templated lambda with the C++ type of a ScalarType,
//   dispatch_floating(x.dtype(), "relu", [&]<class T>() { kernel<T>(...); });
// and raises a frugal::Error naming the op when the type is not among those it supports.
#pragma once

#include <string>

#include "common/error.h"
#include "engine/dtype.h"

namespace frugal {

[[noreturn]] void throw_unsupported_dtype(const char* op, ScalarType t, const char* supported);

// float32, float64, float16, bfloat16.
template <class F>
decltype(auto) dispatch_floating(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Float32:
      return f.template operator()<float>();
    case ScalarType::Float64:
      return f.template operator()<double>();
    case ScalarType::Float16:
      return f.template operator()<Half>();
    case ScalarType::BFloat16:
      return f.template operator()<BFloat16>();
    default:
      throw_unsupported_dtype(op, t, "floating-point types");
  }
}

// Every numeric type except bool.
template <class F>
decltype(auto) dispatch_numeric(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Int32:
      return f.template operator()<std::int32_t>();
    case ScalarType::Int64:
      return f.template operator()<std::int64_t>();
    case ScalarType::UInt8:
      return f.template operator()<std::uint8_t>();
    case ScalarType::Bool:
      throw_unsupported_dtype(op, t, "numeric types (not bool)");
    default:
      return dispatch_floating(t, op, std::forward<F>(f));
  }
}

// All eight types.
template <class F>
decltype(auto) dispatch_all(ScalarType t, const char* op, F&& f) {
  if (t == ScalarType::Bool) return f.template operator()<bool>();
  return dispatch_numeric(t, op, std::forward<F>(f));
}

}  // namespace frugal
