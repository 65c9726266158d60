// Saving a tensor for backward, and the version check on unpacking it.
#include "engine/autograd/saved_tensor.h"

#include "common/error.h"

namespace frugal::autograd {

SavedTensor::SavedTensor(const Tensor& t, const char* op) : op_(op) {
  if (!t.defined()) return;
  FRUGAL_CHECK(!t.impl()->is_inference(),
               std::string(op) +
                   ": an inference tensor (made under InferenceMode) cannot be saved for "
                   "backward; make it outside InferenceMode or clone() it there");
  tensor_ = t.detach();
  version_ = t._version();
}

const Tensor& SavedTensor::unpack() const {
  if (tensor_.defined() && tensor_._version() != version_) [[unlikely]] {
    throw Error(std::string("one of the tensors needed for gradient computation has been "
                            "modified by an in-place operation: saved by ") +
                op_ + ", " + tensor_.toString() + shape_string(tensor_.sizes()) +
                " is at version " + std::to_string(tensor_._version()) + "; expected version " +
                std::to_string(version_));
  }
  return tensor_;
}

}  // namespace frugal::autograd
