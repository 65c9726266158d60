// The idx format of the MNIST family: a big-endian magic (two zero bytes, a type code, the
// number of dims), the dims as big-endian int32, then the data, big-endian. Plain or gzip.
#pragma once

#include <string>

#include "engine/tensor.h"

namespace frugal::data {

// Reads an idx file, plain or gzip-compressed (recognised by its 1f 8b magic), into a fresh
// tensor from the caching allocator whose shape is the file's dims. Type codes map to
// dtypes: 0x08 ubyte -> uint8, 0x0B short and 0x0C int -> int32, 0x0D float -> float32,
// 0x0E double -> float64; 0x09 sbyte has no frugal dtype and is refused. Every error names
// the file and what is wrong with it (magic, type, dims, truncation, trailing bytes, gzip).
Tensor read_idx(const std::string& path);

}  // namespace frugal::data
