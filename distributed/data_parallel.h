// DistributedDataParallel: the module on every rank starts from rank 0's parameters and
// buffers, and after each backward sync_gradients() averages the gradients over the ranks
// in ~25 MiB flat buckets (one all-reduce per bucket), so every rank's optimizer takes the
// same step: the step of the whole global batch, computed on a share of it per rank.
#pragma once

#include <memory>
#include <vector>

#include "distributed/process_group.h"
#include "nn/module.h"

namespace frugal::distributed {

struct DistributedDataParallelOptions {
  // PyTorch's bucket_cap_mb default: big enough that a bucket's all-reduce is bandwidth-bound,
  // small enough to bound the extra memory per bucket.
  double bucket_cap_mb = 25;
  // Also broadcast buffers (batch-norm running statistics) from rank 0 at construction.
  bool broadcast_buffers = true;
};

class DistributedDataParallel : public nn::Module {
 public:
  // Registers `module` as the child "module" (so state_dict names are PyTorch DDP's
  // "module.0.weight"), broadcasts its parameters and buffers from rank 0, and lays out the
  // gradient buckets. Uses the default group when `group` is null.
  explicit DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                   DistributedDataParallelOptions options = {},
                                   ProcessGroup* group = nullptr);

  Tensor forward(const Tensor& input) override { return module_->forward(input); }
  nn::Module& module() { return *module_; }

  // After backward, before the optimizer step: replaces every parameter's gradient by its
  // mean over the ranks. A parameter without a gradient counts as zeros (and gets the mean).
  // Does nothing inside a no_sync() scope.
  void sync_gradients();

  // While a NoSync lives, sync_gradients() does nothing, so gradients of several backward
  // passes accumulate locally and are averaged once (PyTorch's `with ddp.no_sync():`).
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.sync_enabled_) {
      ddp.sync_enabled_ = false;
    }
    ~NoSync() { ddp_.sync_enabled_ = previous_; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }

  // The layout: how many buckets, and the bytes of their flat buffers (held for the life of
  // the wrapper: the memory DDP costs, one gradient-sized copy of the parameters).
  std::size_t bucket_count() const { return buckets_.size(); }
  std::size_t bucket_bytes() const;
  ProcessGroup& process_group() { return *group_; }

 private:
  struct Bucket {
    Tensor flat;                  // 1-D, the dtype of its parameters, from the allocator
    std::vector<Tensor> params;   // in bucket order
    std::vector<std::int64_t> offsets;
  };
  std::shared_ptr<nn::Module> module_;
  ProcessGroup* group_;
  std::vector<Bucket> buckets_;
  bool sync_enabled_ = true;
};

}  // namespace frugal::distributed
