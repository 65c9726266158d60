// DistributedDataParallel: broadcast at construction, then gradient buckets — each a flat
// buffer the gradients are copied into by hooks during backward, all-reduced in one call as
// soon as it is full, and copied back out by sync_gradients().
#include "distributed/data_parallel.h"

#include <string>

#include "common/error.h"
#include "engine/frugal.h"

namespace frugal::distributed {

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 DistributedDataParallelOptions options,
                                                 ProcessGroup* group)
    : nn::Module("DistributedDataParallel"),
      module_(std::move(module)),
      group_(group ? group : &default_group()),
      broadcast_buffers_(options.broadcast_buffers) {
  FRUGAL_CHECK(module_ != nullptr, "DistributedDataParallel: the module is null");
  FRUGAL_CHECK(options.bucket_cap_mb > 0,
               "DistributedDataParallel: bucket_cap_mb must be > 0, got " +
                   std::to_string(options.bucket_cap_mb));
  register_module("module", module_);

  // Every rank starts from rank 0's weights, whatever its own initialisation drew.
  {
    NoGradGuard no_grad;
    for (Tensor& p : module_->parameters()) {
      FRUGAL_CHECK(p.is_contiguous(), "DistributedDataParallel: parameters must be contiguous");
      group_->broadcast(p, 0);
    }
  }
  if (broadcast_buffers_) broadcast_buffers();

  // Buckets in reverse registration order: backward produces the last layers' gradients
  // first, which is the order PyTorch fills buckets in (and would reduce them in, were the
  // reduction overlapped with backward). A bucket holds one dtype.
  const auto cap = static_cast<std::size_t>(options.bucket_cap_mb * 1024 * 1024);
  std::vector<Tensor> params;
  for (const Tensor& p : module_->parameters())
    if (p.requires_grad()) params.push_back(p);
  std::vector<Bucket> open;
  std::vector<std::size_t> open_bytes;
  auto close = [&](std::size_t i) {
    Bucket& b = open[i];
    std::int64_t numel = 0;
    for (const Tensor& p : b.params) {
      b.offsets.push_back(numel);
      numel += p.numel();
    }
    b.flat = empty({numel}, TensorOptions(b.params.front().dtype()));
    buckets_.push_back(std::move(b));
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
    open_bytes.erase(open_bytes.begin() + static_cast<std::ptrdiff_t>(i));
  };
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const Tensor& p = *it;
    FRUGAL_CHECK(p.is_cpu(),
                 "DistributedDataParallel: the MPI backend takes CPU parameters, got one on " +
                     p.device().str());
    std::size_t i = 0;
    while (i < open.size() && open[i].params.front().dtype() != p.dtype()) ++i;
    if (i == open.size()) {
      open.emplace_back();
      open_bytes.push_back(0);
    }
    open[i].params.push_back(p);
    open_bytes[i] += p.nbytes();
    if (open_bytes[i] >= cap) close(i);
  }
  while (!open.empty()) close(0);

  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.ready.assign(bucket.params.size(), false);
    bucket.pending = bucket.params.size();
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      const unsigned handle = bucket.params[k].register_hook([this, b, k](const Tensor& grad) {
        on_gradient(b, k, grad);
        return Tensor();  // the gradient itself is left as it is
      });
      hooks_.emplace_back(bucket.params[k], handle);
    }
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  for (auto& [param, handle] : hooks_) param.remove_hook(handle);
  // Reductions still in flight are waited for by their Work's destructor.
}

void DistributedDataParallel::broadcast_buffers() {
  NoGradGuard no_grad;
  for (Tensor& b : module_->buffers()) group_->broadcast(b, 0);
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  // PyTorch syncs buffers when the forward records gradients for a synchronised step.
  if (broadcast_buffers_ && sync_enabled_ && GradMode::is_enabled() && group_->size() > 1)
    broadcast_buffers();
  return module_->forward(input);
}

Tensor DistributedDataParallel::slot(Bucket& bucket, std::size_t k) const {
  const Tensor& p = bucket.params[k];
  return bucket.flat.narrow(0, bucket.offsets[k], p.numel()).view(p.sizes());
}

void DistributedDataParallel::on_gradient(std::size_t b, std::size_t k, const Tensor& grad) {
  if (!sync_enabled_) return;  // no_sync: gradients only accumulate locally
  Bucket& bucket = buckets_[b];
  FRUGAL_CHECK(!bucket.work && !bucket.ready[k],
               "DistributedDataParallel: a second backward ran before sync_gradients() finished "
               "the reduction of the first; call sync_gradients() after each backward, or run the "
               "earlier backward passes inside no_sync() to accumulate gradients");
  NoGradGuard no_grad;
  const Tensor& p = bucket.params[k];
  Tensor s = slot(bucket, k);
  // What .grad will hold once this backward has accumulated into it.
  s.copy_(grad.to(p.dtype()).reshape(p.sizes()));
  if (p.grad().defined()) s.add_(p.grad());
  bucket.ready[k] = true;
  if (--bucket.pending == 0) launch_ready();
}

void DistributedDataParallel::launch_ready() {
  // In bucket order only: MPI matches collectives by the order ranks start them, and a
  // different gradient order on two ranks must not pair different buckets.
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& bucket = buckets_[next_launch_++];
    bucket.work = group_->all_reduce_async(bucket.flat, ReduceOp::AVG);
  }
}

std::size_t DistributedDataParallel::reductions_in_flight() const {
  std::size_t n = 0;
  for (const Bucket& b : buckets_) n += b.work != nullptr;
  return n;
}

std::size_t DistributedDataParallel::bucket_bytes() const {
  std::size_t total = 0;
  for (const Bucket& b : buckets_) total += b.flat.nbytes();
  return total;
}

void DistributedDataParallel::sync_gradients() {
  if (!sync_enabled_) return;
  NoGradGuard no_grad;
  // Buckets backward did not fill (parameters without a gradient this time, or gradients
  // set by hand): every slot from the current .grad, zeros where there is none.
  for (std::size_t b = next_launch_; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      const Tensor& g = bucket.params[k].grad();
      Tensor s = slot(bucket, k);
      if (g.defined())
        s.copy_(g);
      else
        s.zero_();
    }
    bucket.pending = 0;
  }
  launch_ready();
  for (Bucket& bucket : buckets_) {
    bucket.work->wait();
    bucket.work.reset();
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      Tensor& p = bucket.params[k];
      Tensor& g = p.mutable_grad();
      if (!g.defined()) g = empty_like(p);
      g.copy_(slot(bucket, k));
    }
    bucket.ready.assign(bucket.params.size(), false);
    bucket.pending = bucket.params.size();
  }
  next_launch_ = 0;
}

}  // namespace frugal::distributed
