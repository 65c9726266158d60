// ProcessGroupMPI on 2+ ranks: all_reduce SUM/AVG and broadcast give exact values; tensors
// the MPI backend cannot take are frugal::Error naming the call, not an MPI abort.
#include <catch2/catch.hpp>

#include "allocator/cuda_device.h"
#include "common/error.h"
#include "engine/frugal.h"
#include "mpi_group.h"

using namespace frugal;
using Catch::Contains;

TEST_CASE("collectives: rank and world size") {
  auto& g = test::world();
  CHECK(g.size() >= 2);
  CHECK(g.rank() >= 0);
  CHECK(g.rank() < g.size());
  CHECK(distributed::get_rank() == g.rank());
  CHECK(distributed::get_world_size() == g.size());
  CHECK(g.backend() == "mpi");
  g.barrier();
}

TEST_CASE("collectives: all_reduce SUM and AVG are exact in float32 and float64") {
  auto& g = test::world();
  const int r = g.rank(), n = g.size();
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    // Rank r holds r + 1 + i at index i: the sum is n(n+1)/2 + n*i, exact in both types.
    Tensor t = add(arange(0, 1000, 1, dtype), static_cast<double>(r + 1));
    g.all_reduce(t, distributed::ReduceOp::SUM);
    Tensor avg = add(arange(0, 1000, 1, dtype), static_cast<double>(r + 1));
    g.all_reduce(avg, distributed::ReduceOp::AVG);
    const Tensor t64 = t.to(kFloat64), avg64 = avg.to(kFloat64);
    for (std::int64_t i : {0, 1, 499, 999}) {
      const double sum = n * (n + 1) / 2.0 + static_cast<double>(n) * static_cast<double>(i);
      CHECK(t64.data_ptr<double>()[i] == sum);
      CHECK(avg64.data_ptr<double>()[i] == sum / n);
    }
  }
}

TEST_CASE("collectives: broadcast copies root's values, any dtype") {
  auto& g = test::world();
  const int root = g.size() - 1;
  Tensor f = full({7}, static_cast<double>(g.rank() * 10 + 3));
  g.broadcast(f, root);
  for (int i = 0; i < 7; ++i) CHECK(f.data_ptr<float>()[i] == static_cast<float>(root * 10 + 3));
  Tensor counter = full({1}, static_cast<double>(g.rank() + 100), kInt64);
  g.broadcast(counter, 0);
  CHECK(counter.data_ptr<std::int64_t>()[0] == 100);
}

TEST_CASE("collectives: inputs the MPI backend cannot take are frugal::Error") {
  auto& g = test::world();
  Tensor wide = zeros({4, 6});
  Tensor strided = wide.transpose(0, 1);
  CHECK_THROWS_WITH(g.all_reduce(strided), Contains("all_reduce") && Contains("contiguous"));
  Tensor ints = zeros({3}, kInt64);
  CHECK_THROWS_WITH(g.all_reduce(ints), Contains("all_reduce") && Contains("int64"));
  Tensor half = zeros({3}, kFloat16);
  CHECK_THROWS_AS(g.all_reduce(half), Error);
  Tensor none;
  CHECK_THROWS_WITH(g.all_reduce(none), Contains("undefined"));
  Tensor ok = zeros({3});
  CHECK_THROWS_WITH(g.broadcast(ok, g.size()), Contains("broadcast") && Contains("root"));
  if (cuda::is_available()) {
    Tensor gpu = zeros({3}, Device(kCUDA));
    CHECK_THROWS_WITH(g.all_reduce(gpu), Contains("CPU"));
  }
  CHECK_THROWS_AS(distributed::init_process_group("mpi"), Error);  // already initialized
  CHECK_THROWS_AS(distributed::ProcessGroupMPI().broadcast(ok, -1), Error);
  // The group still works after the refused calls.
  Tensor one = ones({2});
  g.all_reduce(one);
  CHECK(one.data_ptr<float>()[0] == static_cast<float>(g.size()));
}
