// Out-of-line pieces of the error types, so that throwing sites stay small.
#include "common/error.h"

namespace frugal::detail {

void throw_error(const char* /*file*/, int /*line*/, const std::string& message) {
  throw Error(message);
}

void throw_error(const char* /*file*/, int /*line*/, const char* message) { throw Error(message); }

void throw_formatted(const char* /*file*/, int /*line*/, const char* format,
                     std::initializer_list<FormatArg> values) {
  std::string message;
  const FormatArg* next = values.begin();
  for (const char* c = format; *c != '\0'; ++c) {
    if (c[0] == '{' && c[1] == '}' && next != values.end()) {
      message += next->text != nullptr ? std::string(next->text) : std::to_string(next->integer);
      ++next;
      ++c;
    } else {
      message += *c;
    }
  }
  throw Error(message);
}

}  // namespace frugal::detail
