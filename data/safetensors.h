// safetensors, the weights format PyTorch and the Hugging Face tools read: an 8-byte
// little-endian header length N, N bytes of JSON naming each tensor's dtype, shape and byte
// range, then the tensors' raw little-endian bytes, back to back in offset order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace frugal::data {

// Writes the tensors in the order given (their offsets follow that order) with the header
// padded with spaces so that the data starts 8-byte aligned. The write is atomic: a run
// killed while saving leaves the previous file at `path` intact (see AtomicFile). Tensors
// on any device and with any strides are written as contiguous CPU bytes. Names must be
// unique, non-empty and not "__metadata__".
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  std::vector<std::pair<std::string, Tensor>> tensors;  // in offset order
  std::vector<std::uint64_t> file_offsets;  // where each tensor's bytes begin in the file
  std::map<std::string, std::string> metadata;
  // The tensor named `name`; a frugal::Error listing none such otherwise.
  const Tensor& at(const std::string& name) const;
};

// Reads and validates a whole file into fresh CPU tensors from the caching allocator.
// Errors name the file and, where one is at fault, the tensor: header length beyond the
// file, invalid JSON, unknown dtype, shape and byte range that disagree, ranges out of the
// buffer, overlapping or with gaps, truncated data, BOOL bytes other than 0 and 1.
SafetensorsFile load_safetensors(const std::string& path);

// zlib's crc32 of the tensor's contiguous little-endian bytes: the value Python's
// zlib.crc32 gives for the same tensor's bytes in a safetensors file.
std::uint32_t tensor_crc32(const Tensor& t);

// The safetensors dtype code of a frugal dtype: "F32", "BF16", "I64", "BOOL" ...
const char* safetensors_dtype(ScalarType dtype);

}  // namespace frugal::data
