// DistributedDataParallel: broadcast at construction, then gradient buckets — each a flat
// buffer the gradients are copied into, all-reduced in one call, and copied back out.
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
      group_(group ? group : &default_group()) {
  FRUGAL_CHECK(module_ != nullptr, "DistributedDataParallel: the module is null");
  FRUGAL_CHECK(options.bucket_cap_mb > 0, "DistributedDataParallel: bucket_cap_mb must be > 0, got " +
                                              std::to_string(options.bucket_cap_mb));
  register_module("module", module_);

  // Every rank starts from rank 0's weights, whatever its own initialisation drew.
  {
    NoGradGuard no_grad;
    for (Tensor& p : module_->parameters()) {
      FRUGAL_CHECK(p.is_contiguous(), "DistributedDataParallel: parameters must be contiguous");
      group_->broadcast(p, 0);
    }
    if (options.broadcast_buffers)
      for (Tensor& b : module_->buffers()) group_->broadcast(b, 0);
  }

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
    FRUGAL_CHECK(p.is_cpu(), "DistributedDataParallel: the MPI backend takes CPU parameters, got one on " +
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
}

std::size_t DistributedDataParallel::bucket_bytes() const {
  std::size_t total = 0;
  for (const Bucket& b : buckets_) total += b.flat.nbytes();
  return total;
}

void DistributedDataParallel::sync_gradients() {
  if (!sync_enabled_) return;
  NoGradGuard no_grad;
  for (Bucket& b : buckets_) {
    for (std::size_t k = 0; k < b.params.size(); ++k) {
      Tensor slot = b.flat.narrow(0, b.offsets[k], b.params[k].numel()).view(b.params[k].sizes());
      const Tensor& g = b.params[k].grad();
      if (g.defined())
        slot.copy_(g);
      else
        slot.zero_();
    }
    group_->all_reduce(b.flat, ReduceOp::AVG);
    for (std::size_t k = 0; k < b.params.size(); ++k) {
      Tensor& p = b.params[k];
      const Tensor slot = b.flat.narrow(0, b.offsets[k], p.numel()).view(p.sizes());
      Tensor& g = p.mutable_grad();
      if (!g.defined()) g = empty_like(p);
      g.copy_(slot);
    }
  }
}

}  // namespace frugal::distributed
