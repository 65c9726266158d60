// Element types of tensors, with libtorch's spellings (kFloat32, kFloat, kHalf, kBFloat16,
// kInt64, kLong, kBool ...), their sizes, names and the promotion rule mixed inputs follow.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/half.h"

namespace frugal {

enum class ScalarType : std::uint8_t {
  Float32,
  Float64,
  Float16,
  BFloat16,
  Int32,
  Int64,
  UInt8,
  Bool,
};
inline constexpr int kNumScalarTypes = 8;

inline constexpr ScalarType kFloat32 = ScalarType::Float32;
inline constexpr ScalarType kFloat = ScalarType::Float32;
inline constexpr ScalarType kFloat64 = ScalarType::Float64;
inline constexpr ScalarType kDouble = ScalarType::Float64;
inline constexpr ScalarType kFloat16 = ScalarType::Float16;
inline constexpr ScalarType kHalf = ScalarType::Float16;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
inline constexpr ScalarType kInt32 = ScalarType::Int32;
inline constexpr ScalarType kInt = ScalarType::Int32;
inline constexpr ScalarType kInt64 = ScalarType::Int64;
inline constexpr ScalarType kLong = ScalarType::Int64;
inline constexpr ScalarType kUInt8 = ScalarType::UInt8;
inline constexpr ScalarType kByte = ScalarType::UInt8;
inline constexpr ScalarType kBool = ScalarType::Bool;

std::size_t element_size(ScalarType t);
// "float32", "bfloat16", "int64" ...
const char* dtype_name(ScalarType t);
// libtorch's type names for printing: "Float", "Double", "Half", "BFloat16", "Long" ...
const char* dtype_type_name(ScalarType t);
bool is_floating_point(ScalarType t);
inline bool is_integral(ScalarType t, bool include_bool) {
  return !is_floating_point(t) && (include_bool || t != ScalarType::Bool);
}
// PyTorch's promotion lattice: bool < integers < floating types; float16 with bfloat16
// gives float32; an integer with a floating type gives the floating type.
ScalarType promote_types(ScalarType a, ScalarType b);

// The C++ type of each ScalarType, and back (one line a type: a table, kept as one).
// clang-format off
template <ScalarType S>
struct cpp_type;
template <> struct cpp_type<ScalarType::Float32> { using type = float; };
template <> struct cpp_type<ScalarType::Float64> { using type = double; };
template <> struct cpp_type<ScalarType::Float16> { using type = Half; };
template <> struct cpp_type<ScalarType::BFloat16> { using type = BFloat16; };
template <> struct cpp_type<ScalarType::Int32> { using type = std::int32_t; };
template <> struct cpp_type<ScalarType::Int64> { using type = std::int64_t; };
template <> struct cpp_type<ScalarType::UInt8> { using type = std::uint8_t; };
template <> struct cpp_type<ScalarType::Bool> { using type = bool; };

template <class T>
constexpr ScalarType scalar_type_of();
template <> constexpr ScalarType scalar_type_of<float>() { return ScalarType::Float32; }
template <> constexpr ScalarType scalar_type_of<double>() { return ScalarType::Float64; }
template <> constexpr ScalarType scalar_type_of<Half>() { return ScalarType::Float16; }
template <> constexpr ScalarType scalar_type_of<BFloat16>() { return ScalarType::BFloat16; }
template <> constexpr ScalarType scalar_type_of<std::int32_t>() { return ScalarType::Int32; }
template <> constexpr ScalarType scalar_type_of<std::int64_t>() { return ScalarType::Int64; }
template <> constexpr ScalarType scalar_type_of<std::uint8_t>() { return ScalarType::UInt8; }
template <> constexpr ScalarType scalar_type_of<bool>() { return ScalarType::Bool; }
// clang-format on

}  // namespace frugal
