// The error raised when an op meets an element type it does not support.
#include "engine/dispatch.h"

namespace frugal {

void throw_unsupported_dtype(const char* op, ScalarType t, const char* supported) {
  throw Error(std::string(op) + ": not implemented for " + dtype_name(t) + " (supports " +
              supported + ")");
}

}  // namespace frugal
