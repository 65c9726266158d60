// A minimal JSON reader for file headers (safetensors): objects, arrays, strings with every
// escape, and integers. Anything else (floats, true, false, null) is refused by name, so a
// header this reader accepts means exactly what its writer meant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace frugal::data::json {

struct Member;

struct Value {
  enum class Kind { Object, Array, String, Integer };
  Kind kind = Kind::Integer;
  std::int64_t integer = 0;
  std::string string;
  std::vector<Value> array;
  // Members in the order written; duplicate keys are refused while parsing. (A struct of
  // its own, not std::pair: a pair needs Value complete, and Value is not complete here.)
  std::vector<Member> object;

  bool is_object() const { return kind == Kind::Object; }
  bool is_array() const { return kind == Kind::Array; }
  bool is_string() const { return kind == Kind::String; }
  bool is_integer() const { return kind == Kind::Integer; }
  // The member named `key`, or nullptr.
  const Value* find(std::string_view key) const;
};

struct Member {
  std::string key;
  Value value;
};

const char* kind_name(Value::Kind kind);  // "object", "array", "string", "integer"

// Parses one value filling all of `text` (whitespace around it allowed). Throws
// frugal::Error naming the byte offset and what was expected there.
Value parse(std::string_view text);

// `text` as a JSON string literal, quotes included (for writers).
std::string quote(std::string_view text);

}  // namespace frugal::data::json
