// The header JSON reader: what it accepts (objects, arrays, strings with escapes, 64-bit
// integers) and, by name and byte offset, everything it refuses.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "data/json.h"

using namespace frugal;
using namespace frugal::data;
using Catch::Matchers::Contains;

namespace {
std::string error_of(std::string_view text) {
  try {
    json::parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("json: objects, arrays, strings and integers") {
  const json::Value v = json::parse(
      R"( {"a": [1, -2, 9223372036854775807, -9223372036854775808], "b": {"c": "x\"\\\/\b\f\n\r\tA\u00e9\ud83d\ude00"},
          "d": [], "e": {}, "f": "h\u00e9llo )"
      "caf\xc3\xa9"
      R"("}   )");
  REQUIRE(v.is_object());
  REQUIRE(v.object.size() == 5);
  CHECK(v.object[0].key == "a");  // members keep their order
  const json::Value& a = *v.find("a");
  REQUIRE(a.array.size() == 4);
  CHECK(a.array[1].integer == -2);
  CHECK(a.array[2].integer == std::numeric_limits<std::int64_t>::max());
  CHECK(a.array[3].integer == std::numeric_limits<std::int64_t>::min());
  CHECK(v.find("b")->find("c")->string == "x\"\\/\b\f\n\r\tA\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.find("d")->is_array());
  CHECK(v.find("e")->is_object());
  CHECK(v.find("f")->string == "h\xc3\xa9llo caf\xc3\xa9");
  CHECK(v.find("zzz") == nullptr);
  CHECK(json::parse(json::quote("a\"b\\c\n\x01")).string == "a\"b\\c\n\x01");
}

TEST_CASE("json: everything outside the subset is refused with its position") {
  CHECK_THAT(error_of("{\"a\": 1.5}"), Contains("byte 7") && Contains("only integers"));
  CHECK_THAT(error_of("[1e3]"), Contains("only integers"));
  CHECK_THAT(error_of("[true]"), Contains("true, false and null"));
  CHECK_THAT(error_of("null"), Contains("true, false and null"));
  CHECK_THAT(error_of("[01]"), Contains("leading zeros"));
  CHECK_THAT(error_of("[9223372036854775808]"), Contains("64-bit range"));
  CHECK_THAT(error_of("[-9223372036854775809]"), Contains("64-bit range"));
  CHECK_THAT(error_of("{\"a\": 1, \"a\": 2}"), Contains("duplicate key \"a\""));
  CHECK_THAT(error_of("{\"a\" 1}"), Contains("expected ':'"));
  CHECK_THAT(error_of("{\"a\": 1,}"), Contains("expected a string key"));
  CHECK_THAT(error_of("[1 2]"), Contains("expected ',' or ']'"));
  CHECK_THAT(error_of("{\"a\": 1"), Contains("expected ',' or '}'") && Contains("end of text"));
  CHECK_THAT(error_of("\"abc"), Contains("unterminated string"));
  CHECK_THAT(error_of("\"a\nb\""), Contains("control character"));
  CHECK_THAT(error_of("\"\\x\""), Contains("unknown escape \\x"));
  CHECK_THAT(error_of("\"\\u12g4\""), Contains("bad hex digit"));
  CHECK_THAT(error_of("\"\\ud800\""), Contains("high surrogate"));
  CHECK_THAT(error_of("\"\\udc00\""), Contains("lone low surrogate"));
  CHECK_THAT(error_of("\"\xff\""), Contains("invalid UTF-8"));
  CHECK_THAT(error_of("\"\xc0\xaf\""), Contains("invalid UTF-8"));  // an overlong '/'
  CHECK_THAT(error_of("\"\xe2\x82\""), Contains("invalid UTF-8"));
  CHECK_THAT(error_of("{} {}"), Contains("after the end of the value"));
  CHECK_THAT(error_of(""), Contains("found end of text"));
  CHECK_THAT(error_of(std::string(100, '[') + std::string(100, ']')), Contains("nested deeper"));
}
