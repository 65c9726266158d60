// BatchNorm2d: PyTorch's initial values (weight 1, bias 0, mean 0, var 1) and the momentum
// rule, including the cumulative average for momentum=None.
#include "nn/batchnorm.h"

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/batch_norm.h"
#include "engine/ops/factory.h"

namespace frugal::nn {

BatchNorm2d::BatchNorm2d(const BatchNormOptions& o) : Module("BatchNorm2d"), options(o) {
  FRUGAL_CHECK(o.num_features_ > 0, "BatchNorm2d: num_features must be positive, got " +
                                        std::to_string(o.num_features_));
  FRUGAL_CHECK(o.eps_ > 0, "BatchNorm2d: eps must be positive");
  if (o.affine_) {
    weight = ones({o.num_features_});
    bias = zeros({o.num_features_});
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }
  if (o.track_running_stats_) {
    running_mean = zeros({o.num_features_});
    running_var = ones({o.num_features_});
    num_batches_tracked = zeros({}, kInt64);
    register_buffer("running_mean", running_mean);
    register_buffer("running_var", running_var);
    register_buffer("num_batches_tracked", num_batches_tracked);
  }
}

Tensor BatchNorm2d::forward(const Tensor& input) {
  FRUGAL_CHECK(input.dim() == 4, "BatchNorm2d: expected a 4-d input [N, C, H, W], got shape " +
                                     shape_string(input.sizes()));
  FRUGAL_CHECK(input.size(1) == options.num_features_,
               "BatchNorm2d: expected " + std::to_string(options.num_features_) +
                   " channels, got input of shape " + shape_string(input.sizes()));
  const bool use_batch_stats = is_training() || !options.track_running_stats_;
  double momentum = options.momentum_.value_or(0.0);
  if (is_training() && options.track_running_stats_) {
    {
      NoGradGuard no_grad;
      num_batches_tracked.add_(1);
    }
    if (!options.momentum_)
      momentum = 1.0 / static_cast<double>(num_batches_tracked.item<std::int64_t>());
  }
  // Training moves the running statistics (when tracked) inside the op.
  const auto op = options.fused_relu_ ? batch_norm_relu : batch_norm;
  return op(input, weight, bias, running_mean, running_var, use_batch_stats, momentum,
            options.eps_);
}

std::string BatchNorm2d::extra_repr() const {
  return std::to_string(options.num_features_) + ", eps=" + std::to_string(options.eps_) +
         ", momentum=" + (options.momentum_ ? std::to_string(*options.momentum_) : "None") +
         ", affine=" + (options.affine_ ? "true" : "false") +
         ", track_running_stats=" + (options.track_running_stats_ ? "true" : "false") +
         (options.fused_relu_ ? ", fused_relu=true" : "");
}

}  // namespace frugal::nn
