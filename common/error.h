// frugal's error types: every user mistake and every refused resource becomes an exception
// derived from frugal::Error, whose message names what was wrong. Nothing aborts.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace frugal {

// Base of every exception frugal throws on purpose.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A configuration string or option that cannot be honoured (bad key, bad value).
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& what) : Error(what) {}
};

// Throws frugal::Error with `message` when `condition` is false. The message is built only
// on failure, so checks on hot paths cost a branch.
#define FRUGAL_CHECK(condition, ...)                                  \
  do {                                                                \
    if (!(condition)) [[unlikely]]                                    \
      ::frugal::detail::throw_error(__FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

// The same check with a message made of `format` and values (integers or C strings), each "{}"
// replaced by the next one: FRUGAL_CHECK_FORMAT(k <= max, "{}: k = {} is above {}", op, k, max).
// The message is put together in error.cpp, so the caller instantiates no std::string code: the
// kernels compiled once per instruction-set level (kernels/cpu/isa_variant.h) must define no symbol
// that another copy could share, and use this form.
#define FRUGAL_CHECK_FORMAT(condition, format, ...)                                 \
  do {                                                                              \
    if (!(condition)) [[unlikely]]                                                  \
      ::frugal::detail::throw_formatted(__FILE__, __LINE__, format, {__VA_ARGS__}); \
  } while (0)

namespace detail {
[[noreturn]] void throw_error(const char* file, int line, const std::string& message);
[[noreturn]] void throw_error(const char* file, int line, const char* message);

// One value of FRUGAL_CHECK_FORMAT's message.
struct FormatArg {
  constexpr FormatArg(long long v) : integer(v) {}
  constexpr FormatArg(long v) : integer(v) {}
  constexpr FormatArg(int v) : integer(v) {}
  constexpr FormatArg(unsigned long v) : integer(static_cast<long long>(v)) {}
  constexpr FormatArg(unsigned v) : integer(v) {}
  constexpr FormatArg(const char* v) : text(v) {}
  long long integer = 0;
  const char* text = nullptr;  // set for a string
};
[[noreturn]] void throw_formatted(const char* file, int line, const char* format,
                                  std::initializer_list<FormatArg> values);
}  // namespace detail

}  // namespace frugal
