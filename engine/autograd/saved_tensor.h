// A tensor kept by a node for its backward. It holds a history-free alias of the data (so a
// node saving its own output makes no reference cycle) and the version the data had when it
// was saved: if an in-place op changed it since, unpacking is an error, not a wrong gradient.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace frugal::autograd {

class SavedTensor {
 public:
  SavedTensor() = default;
  // Saves `t` (undefined stays undefined). `op` names the saving op in errors.
  SavedTensor(const Tensor& t, const char* op);
  // The saved data; a frugal::Error naming the op when it was modified in place since.
  const Tensor& unpack() const;
  bool defined() const { return tensor_.defined(); }

 private:
  Tensor tensor_;
  std::uint32_t version_ = 0;
  const char* op_ = nullptr;
};

}  // namespace frugal::autograd
