// DistributedDataParallel on 2 ranks: each rank's half of a batch, gradients averaged in
// buckets during backward, gives the parameters one process gets from the whole batch;
// buffers and weights start from rank 0; no_sync accumulates micro-batches locally; the
// buckets' bytes are the allocator's; a second backward before sync_gradients is refused.
#include <catch2/catch.hpp>

#include "distributed/data_parallel.h"
#include "mpi_group.h"
#include "nn/nn.h"

using namespace frugal;

namespace {

double max_abs_diff(const nn::Module& a, const nn::Module& b) {
  const auto pa = a.parameters(), pb = b.parameters();
  REQUIRE(pa.size() == pb.size());
  double worst = 0;
  for (std::size_t i = 0; i < pa.size(); ++i)
    worst = std::max(worst, sub(pa[i], pb[i]).abs().max().to(kFloat64).item<double>());
  return worst;
}

// The same data on every rank: a generator with a fixed seed.
struct Data {
  Tensor images, labels;
};
Data batch(std::int64_t n, std::uint64_t seed) {
  Generator gen(seed);
  return {randn({n, 1, 28, 28}, {}, &gen), randint(0, 10, {n}, TensorOptions(kInt64), &gen)};
}

}  // namespace

TEST_CASE("ddp: 2 ranks on half a batch each match 1 process on the whole batch") {
  auto& g = test::world();
  const int rank = g.rank(), n = g.size();
  manual_seed(1000 + static_cast<std::uint64_t>(rank));  // different initial weights per rank
  // A small bucket cap, so the mlp's 6 parameters spread over several buckets.
  distributed::DistributedDataParallel ddp(nn::mlp(), {.bucket_cap_mb = 0.5});
  CHECK(ddp.bucket_count() > 1);
  auto reference = nn::mlp();
  reference->load_state_dict(ddp.module().state_dict());  // rank 0's weights, after the broadcast

  optim::SGD opt_ddp(ddp.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt_ref(reference->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  const std::int64_t global = 32, share = global / n;
  for (int step = 0; step < 3; ++step) {
    const Data d = batch(global, 7 + static_cast<std::uint64_t>(step));
    opt_ref.zero_grad();
    cross_entropy(reference->forward(d.images), d.labels).backward();
    opt_ref.step();

    opt_ddp.zero_grad();
    const Tensor x = d.images.narrow(0, rank * share, share);
    const Tensor y = d.labels.narrow(0, rank * share, share);
    cross_entropy(ddp.forward(x), y).backward();
    // The hooks filled every bucket during backward and started its all-reduce there.
    CHECK(ddp.reductions_in_flight() == ddp.bucket_count());
    ddp.sync_gradients();
    CHECK(ddp.reductions_in_flight() == 0);
    opt_ddp.step();
  }
  CHECK(max_abs_diff(ddp.module(), *reference) < 1e-5);
  // And every rank holds the same weights: rank 0's, broadcast, compared.
  for (Tensor p : ddp.parameters()) {
    Tensor mine = p.detach().clone(), root = p.detach().clone();
    g.broadcast(root, 0);
    CHECK(sub(mine, root).abs().max().item<float>() == 0.0f);
  }
}

TEST_CASE("ddp: construction broadcasts parameters and buffers from rank 0") {
  auto& g = test::world();
  manual_seed(50 + static_cast<std::uint64_t>(g.rank()));
  auto cnn = nn::cnn();
  // Rank-dependent buffers (batch-norm running means) become rank 0's too.
  for (Tensor b : cnn->buffers())
    if (b.is_floating_point()) b.fill_(static_cast<double>(g.rank()));
  distributed::DistributedDataParallel ddp(cnn);
  CHECK(ddp.named_parameters().front().first.rfind("module.", 0) == 0);
  for (Tensor b : ddp.buffers())
    if (b.is_floating_point()) CHECK(b.abs().max().item<float>() == 0.0f);
  for (Tensor p : ddp.parameters()) {
    Tensor copy = p.detach().clone();
    g.all_reduce(copy, distributed::ReduceOp::AVG);
    CHECK(sub(copy, p.detach()).abs().max().item<float>() == 0.0f);
  }
}

TEST_CASE(
    "ddp: buckets hold every gradient once, in allocator memory; no_sync skips the reduction") {
  auto& g = test::world();
  auto model = nn::mlp();
  const std::size_t before = alloc::cpu_allocator().memory_allocated();
  distributed::DistributedDataParallel ddp(model);  // 25 MiB cap: the mlp fits in one bucket
  CHECK(ddp.bucket_count() == 1);
  std::size_t param_bytes = 0;
  for (const Tensor& p : model->parameters()) param_bytes += p.nbytes();
  CHECK(ddp.bucket_bytes() == param_bytes);
  CHECK(alloc::cpu_allocator().memory_allocated() - before >= param_bytes);

  // Gradients of rank + 1 everywhere; inside no_sync they stay local, after it they average.
  auto set_grads = [&](double v) {
    for (Tensor p : ddp.parameters()) p.mutable_grad() = full_like(p.detach(), v);
  };
  set_grads(g.rank() + 1);
  {
    auto guard = ddp.no_sync();
    ddp.sync_gradients();
  }
  const Tensor first = ddp.parameters().front().grad();
  CHECK(first.max().item<float>() == static_cast<float>(g.rank() + 1));
  ddp.sync_gradients();
  const float mean = static_cast<float>(g.size() + 1) / 2.0f;
  for (const Tensor& p : ddp.parameters()) {
    CHECK(p.grad().max().item<float>() == mean);
    CHECK(p.grad().min().item<float>() == mean);
  }
  // A parameter without a gradient counts as zeros and receives the mean.
  ddp.zero_grad();
  if (g.rank() == 0) set_grads(2.0 * g.size());
  ddp.sync_gradients();
  for (const Tensor& p : ddp.parameters()) CHECK(p.grad().max().item<float>() == 2.0f);
}

TEST_CASE("ddp: micro-batches under no_sync, reduced once, give the whole batch's gradients") {
  auto& g = test::world();
  const int rank = g.rank(), n = g.size();
  distributed::DistributedDataParallel ddp(nn::mlp(), {.bucket_cap_mb = 0.3});
  auto reference = nn::mlp();
  reference->load_state_dict(ddp.module().state_dict());
  const std::int64_t global = 32, share = global / n, micro = share / 2;
  const Data d = batch(global, 99);
  cross_entropy(reference->forward(d.images), d.labels).backward();

  for (int k = 0; k < 2; ++k) {
    const Tensor x = d.images.narrow(0, rank * share + k * micro, micro);
    const Tensor y = d.labels.narrow(0, rank * share + k * micro, micro);
    const Tensor loss = mul(cross_entropy(ddp.forward(x), y), 0.5);  // 2 equal micro-batches
    if (k == 0) {
      auto local_only = ddp.no_sync();
      loss.backward();
      CHECK(ddp.reductions_in_flight() == 0);
    } else {
      loss.backward();  // the last micro-batch: its hooks reduce the accumulated gradients
      CHECK(ddp.reductions_in_flight() == ddp.bucket_count());
    }
  }
  ddp.sync_gradients();
  const auto mine = ddp.parameters(), ref = reference->parameters();
  for (std::size_t i = 0; i < mine.size(); ++i)
    CHECK(sub(mine[i].grad(), ref[i].grad()).abs().max().item<float>() < 1e-6f);
}

TEST_CASE("ddp: a second backward before sync_gradients is a frugal::Error, and sync still works") {
  auto& g = test::world();
  distributed::DistributedDataParallel ddp(nn::mlp());
  const Data d = batch(8, 5);
  cross_entropy(ddp.forward(d.images), d.labels).backward();
  CHECK_THROWS_WITH(cross_entropy(ddp.forward(d.images), d.labels).backward(),
                    Catch::Contains("sync_gradients") && Catch::Contains("no_sync"));
  ddp.sync_gradients();
  CHECK(ddp.reductions_in_flight() == 0);
  g.barrier();
}

TEST_CASE("ddp: buffers are rank 0's again before each forward that records gradients") {
  auto& g = test::world();
  auto cnn = nn::cnn();
  distributed::DistributedDataParallel ddp(cnn);
  ddp.eval();  // batch norm then reads the running statistics and leaves them alone
  auto set_buffers = [&](double v) {
    for (Tensor b : cnn->buffers())
      if (b.is_floating_point()) b.fill_(v);
  };
  auto buffers_are = [&](double v) {
    for (Tensor b : cnn->buffers())
      if (b.is_floating_point() && (b.max().item<double>() != v || b.min().item<double>() != v))
        return false;
    return true;
  };
  const Data d = batch(4, 3);
  set_buffers(g.rank() + 1.0);
  {
    NoGradGuard no_grad;  // an evaluation forward: each rank keeps its own
    ddp.forward(d.images);
    CHECK(buffers_are(g.rank() + 1.0));
  }
  {
    auto local_only = ddp.no_sync();  // accumulation steps do not sync either
    ddp.forward(d.images);
    CHECK(buffers_are(g.rank() + 1.0));
  }
  Tensor out = ddp.forward(d.images).detach().clone();
  CHECK(buffers_are(1.0));
  // Same weights, same buffers, same input: the same output on every rank.
  Tensor root = out.clone();
  g.broadcast(root, 0);
  CHECK(sub(out, root).abs().max().item<float>() == 0.0f);
}
