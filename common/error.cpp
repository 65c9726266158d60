// Out-of-line pieces of the error types, so that throwing sites stay small.
#include "common/error.h"

namespace frugal::detail {

void throw_error(const char* /*file*/, int /*line*/, const std::string& message) {
  throw Error(message);
}

}  // namespace frugal::detail
