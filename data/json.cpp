// The JSON reader: recursive descent over a string_view with a depth limit (a hostile
// header cannot overflow the stack), integers checked for overflow, strings for UTF-8.
#include "data/json.h"

#include <limits>
#include <unordered_set>

#include "common/error.h"
#include "common/json_writer.h"

namespace frugal::data::json {

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Value document() {
    skip_space();
    Value v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected " + describe_here() + " after the end of the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error("byte " + std::to_string(pos_) + ": " + message);
  }

  std::string describe_here() const {
    if (pos_ >= s_.size()) return "end of text";
    const unsigned char c = static_cast<unsigned char>(s_[pos_]);
    if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    static const char* k = "0123456789abcdef";
    return std::string("byte 0x") + k[c >> 4] + k[c & 15];
  }

  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  void expect(char c) {
    if (pos_ >= s_.size() || s_[pos_] != c)
      fail(std::string("expected '") + c + "', found " + describe_here());
    ++pos_;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (pos_ >= s_.size()) fail("expected a value, found end of text");
    const char c = s_[pos_];
    Value v;
    if (c == '{') {
      v.kind = Value::Kind::Object;
      object(v, depth);
    } else if (c == '[') {
      v.kind = Value::Kind::Array;
      array(v, depth);
    } else if (c == '"') {
      v.kind = Value::Kind::String;
      v.string = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Value::Kind::Integer;
      v.integer = integer();
    } else if (s_.substr(pos_, 4) == "true" || s_.substr(pos_, 5) == "false" ||
               s_.substr(pos_, 4) == "null") {
      fail("true, false and null are not supported here");
    } else {
      fail("expected a value, found " + describe_here());
    }
    return v;
  }

  void object(Value& v, int depth) {
    expect('{');
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return;
    }
    std::unordered_set<std::string> keys;  // a hash set: headers can hold thousands of keys
    for (;;) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"')
        fail("expected a string key, found " + describe_here());
      const std::size_t key_at = pos_;
      std::string key = string();
      if (!keys.insert(key).second) {
        pos_ = key_at;
        fail("duplicate key " + quote(key));
      }
      skip_space();
      expect(':');
      skip_space();
      Value member = value(depth + 1);
      v.object.push_back(Member{std::move(key), std::move(member)});
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return;
      }
      fail("expected ',' or '}' in an object, found " + describe_here());
    }
  }

  void array(Value& v, int depth) {
    expect('[');
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_space();
      v.array.push_back(value(depth + 1));
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return;
      }
      fail("expected ',' or ']' in an array, found " + describe_here());
    }
  }

  std::int64_t integer() {
    const bool negative = s_[pos_] == '-';
    if (negative) ++pos_;
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9')
      fail("expected a digit, found " + describe_here());
    if (s_[pos_] == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9')
      fail("leading zeros are not allowed in a number");
    // Accumulate negatively: the magnitude of INT64_MIN does not fit in a positive int64.
    std::int64_t v = 0;
    const std::int64_t min = std::numeric_limits<std::int64_t>::min();
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const int d = s_[pos_] - '0';
      if (v < (min + d) / 10) fail("integer out of the 64-bit range");
      v = v * 10 - d;
      ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
      fail("only integers are supported, not fractions or exponents");
    if (!negative) {
      if (v == min) fail("integer out of the 64-bit range");
      v = -v;
    }
    return v;
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else {
        --pos_;
        fail("bad hex digit in a \\u escape");
      }
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  // Copies one well-formed UTF-8 sequence (overlongs and surrogates refused).
  void utf8_sequence(std::string& out) {
    const auto c = static_cast<unsigned char>(s_[pos_]);
    int extra;
    unsigned cp, min;
    if (c >= 0xc2 && c <= 0xdf)
      extra = 1, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
      extra = 2, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
      extra = 3, cp = c & 0x07, min = 0x10000;
    else
      fail("invalid UTF-8 in a string");
    if (pos_ + extra >= s_.size()) fail("truncated UTF-8 sequence in a string");
    for (int i = 1; i <= extra; ++i) {
      const auto b = static_cast<unsigned char>(s_[pos_ + i]);
      if ((b & 0xc0) != 0x80) fail("invalid UTF-8 in a string");
      cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      fail("invalid UTF-8 in a string");
    out.append(s_.substr(pos_, extra + 1));
    pos_ += extra + 1;
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("unescaped control character in a string");
      if (c >= 0x80) {
        utf8_sequence(out);
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= s_.size()) fail("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("lone low surrogate in a \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            // A high surrogate must be followed by an escaped low one: together one code point.
            if (s_.substr(pos_, 2) != "\\u") fail("high surrogate not followed by a low one");
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xdc00 || low > 0xdfff) fail("high surrogate not followed by a low one");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          fail("unknown escape \\" + std::string(1, e) + " in a string");
      }
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::Object:
      return "object";
    case Value::Kind::Array:
      return "array";
    case Value::Kind::String:
      return "string";
    case Value::Kind::Integer:
      return "integer";
  }
  return "?";
}

Value parse(std::string_view text) { return Parser(text).document(); }

// One quoting rule for every JSON frugal writes: the writer's (common/json_writer.h).
std::string quote(std::string_view text) { return JsonWriter::quote(std::string(text)); }

}  // namespace frugal::data::json
