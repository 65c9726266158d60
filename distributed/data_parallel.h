// DistributedDataParallel: the module on every rank starts from rank 0's parameters and
// buffers; during backward, a gradient hook copies each parameter's gradient into its ~25 MiB
// flat bucket and starts the bucket's all-reduce as soon as the bucket is full, while backward
// goes on; sync_gradients() waits for them and writes the means back into the gradients. So
// every rank's optimizer takes the step of the whole global batch, computed a share per rank.
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
  // Broadcast buffers (batch-norm running statistics) from rank 0 at construction and before
  // every forward that records gradients outside no_sync(), as PyTorch's DDP does, so all
  // ranks hold rank 0's statistics rather than drifting apart on their own batches.
  bool broadcast_buffers = true;
};

class DistributedDataParallel : public nn::Module {
 public:
  // Registers `module` as the child "module" (so state_dict names are PyTorch DDP's
  // "module.0.weight"), broadcasts its parameters and buffers from rank 0, and lays out the
  // gradient buckets. Uses the default group when `group` is null. Convert the module
  // (to(dtype)) before wrapping it: the buckets and hooks hold the parameters of this moment.
  explicit DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                   DistributedDataParallelOptions options = {},
                                   ProcessGroup* group = nullptr);
  ~DistributedDataParallel() override;

  // The wrapped module's forward, after the buffers' broadcast (see broadcast_buffers).
  Tensor forward(const Tensor& input) override;
  nn::Module& module() { return *module_; }

  // After backward, before the optimizer step (frugal's autograd has no end-of-backward
  // callback to do it from): finishes the buckets' all-reduces — starting, in order, any that
  // backward did not fill — and replaces every parameter's gradient by its mean over the
  // ranks. A parameter that received no gradient counts as zeros (and gets the mean). Does
  // nothing inside a no_sync() scope, where backward starts no reduction either.
  void sync_gradients();
  // Buckets whose all-reduce backward has started and sync_gradients() has not finished.
  std::size_t reductions_in_flight() const;

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
    Tensor flat;                 // 1-D, the dtype of its parameters, from the allocator
    std::vector<Tensor> params;  // in bucket order
    std::vector<std::int64_t> offsets;
    std::vector<bool> ready;     // this backward's gradient is in the slot
    std::size_t pending = 0;     // slots not ready yet
    std::unique_ptr<Work> work;  // the all-reduce in flight
  };
  Tensor slot(Bucket& bucket, std::size_t k) const;
  // The hook of parameter k of bucket b: its local gradient (accumulated + this backward's).
  void on_gradient(std::size_t b, std::size_t k, const Tensor& grad);
  // Starts, in bucket order, the reductions of the full buckets from next_launch_ on.
  void launch_ready();

  void broadcast_buffers();

  std::shared_ptr<nn::Module> module_;
  ProcessGroup* group_;
  bool broadcast_buffers_;
  std::vector<Bucket> buckets_;
  std::size_t next_launch_ = 0;  // every rank starts the buckets' all-reduces in this order
  std::vector<std::pair<Tensor, unsigned>> hooks_;
  bool sync_enabled_ = true;
};

}  // namespace frugal::distributed
