// Sizes, names and promotion of the element types.
#include "engine/dtype.h"

namespace frugal {

std::size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Float64:
    case ScalarType::Int64:
      return 8;
    case ScalarType::Float32:
    case ScalarType::Int32:
      return 4;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      return 2;
    case ScalarType::UInt8:
    case ScalarType::Bool:
      return 1;
  }
  return 0;
}

const char* dtype_name(ScalarType t) {
  static constexpr const char* names[] = {"float32", "float64", "float16", "bfloat16",
                                          "int32",   "int64",   "uint8",   "bool"};
  return names[static_cast<int>(t)];
}

const char* dtype_type_name(ScalarType t) {
  static constexpr const char* names[] = {"Float", "Double", "Half", "BFloat16",
                                          "Int",   "Long",   "Byte", "Bool"};
  return names[static_cast<int>(t)];
}

bool is_floating_point(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Float16 ||
         t == ScalarType::BFloat16;
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  const bool fa = is_floating_point(a), fb = is_floating_point(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {  // both floating
    if (a == ScalarType::Float64 || b == ScalarType::Float64) return ScalarType::Float64;
    return ScalarType::Float32;  // float32 with a 16-bit type, or float16 with bfloat16
  }
  // Both integral or bool: the wider; bool is below everything.
  auto rank = [](ScalarType t) {
    switch (t) {
      case ScalarType::Bool:
        return 0;
      case ScalarType::UInt8:
        return 1;
      case ScalarType::Int32:
        return 2;
      default:
        return 3;  // Int64
    }
  };
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace frugal
