// frugal's error types: every user mistake and every refused resource becomes an exception
// derived from frugal::Error, whose message names what was wrong. Nothing aborts.
#pragma once

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

namespace detail {
[[noreturn]] void throw_error(const char* file, int line, const std::string& message);
}  // namespace detail

}  // namespace frugal
