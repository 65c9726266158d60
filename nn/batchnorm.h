// nn::BatchNorm2d: per-channel normalisation of [N, C, H, W] with learnable scale and shift,
// batch statistics in training (moving running_mean / running_var), running ones in eval;
// optionally with the following ReLU fused in.
#pragma once

#include <optional>

#include "nn/module.h"

namespace frugal::nn {

struct BatchNormOptions {
  explicit BatchNormOptions(std::int64_t num_features) : num_features_(num_features) {}
  BatchNormOptions& eps(double e) {
    eps_ = e;
    return *this;
  }
  // nullopt: a cumulative average over all batches seen (PyTorch's momentum=None).
  BatchNormOptions& momentum(std::optional<double> m) {
    momentum_ = m;
    return *this;
  }
  BatchNormOptions& affine(bool a) {
    affine_ = a;
    return *this;
  }
  BatchNormOptions& track_running_stats(bool t) {
    track_running_stats_ = t;
    return *this;
  }
  // Applies a ReLU to the output in the same pass (and its mask in the backward's passes):
  // BatchNorm2d + ReLU as one layer, one pass fewer over the activation each way.
  BatchNormOptions& fused_relu(bool r) {
    fused_relu_ = r;
    return *this;
  }

  std::int64_t num_features_;
  double eps_ = 1e-5;
  std::optional<double> momentum_ = 0.1;
  bool affine_ = true;
  bool track_running_stats_ = true;
  bool fused_relu_ = false;
};

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(const BatchNormOptions& options);
  explicit BatchNorm2d(std::int64_t num_features) : BatchNorm2d(BatchNormOptions(num_features)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight, bias;                                    // parameters when affine
  Tensor running_mean, running_var, num_batches_tracked;  // buffers when tracking
  const BatchNormOptions options;
};

}  // namespace frugal::nn
