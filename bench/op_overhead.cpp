// frugal-bench-op-overhead: the fixed cost of one op — a 1-element add — with autograd
// recording a node (an input requires grad), under NoGradGuard, and on plain tensors. It is
// the time of dispatch, allocation from the caching allocator, the kernel and, with
// autograd, making and freeing the graph node.
#include <cstdio>

#include "bench/bench_timing.h"
#include "common/cli.h"
#include "common/json_writer.h"
#include "engine/frugal.h"

using namespace frugal;

namespace {

// Median ns per op over `samples` batches of `batch` adds.
template <class F>
double per_op_ns(int samples, int batch, const F& op) {
  return bench::median_ns(samples / 10, samples,
                          [&] {
                            for (int i = 0; i < batch; ++i) op();
                          }) /
         batch;
}

int run(int argc, char** argv) {
  CommandLine cli("frugal-bench-op-overhead",
                  "Median nanoseconds of a 1-element add: with autograd bookkeeping, under\n"
                  "NoGradGuard, and without any tensor requiring grad.");
  cli.option("samples", "N", "timed batches", "2000");
  cli.option("batch", "N", "adds per timed batch", "100");
  cli.flag("json", "print the results as JSON");
  if (!cli.parse(argc, argv)) return 0;
  const int samples = static_cast<int>(cli.get_int("samples"));
  const int batch = static_cast<int>(cli.get_int("batch"));

  const Tensor a = ones({1}).requires_grad_(), b = ones({1});
  const Tensor pa = ones({1}), pb = ones({1});
  volatile bool sink = false;
  const double with_grad = per_op_ns(samples, batch, [&] { sink = add(a, b).defined(); });
  double no_grad_mode = 0;
  {
    NoGradGuard guard;
    no_grad_mode = per_op_ns(samples, batch, [&] { sink = add(a, b).defined(); });
  }
  const double plain = per_op_ns(samples, batch, [&] { sink = add(pa, pb).defined(); });
  const double backward = per_op_ns(samples / 4, batch, [&] {
    Tensor y = add(a, b).sum();
    y.backward();
  });
  (void)sink;

  if (cli.has("json")) {
    JsonWriter j;
    j.field("add_autograd_ns", with_grad);
    j.field("add_no_grad_guard_ns", no_grad_mode);
    j.field("add_plain_ns", plain);
    j.field("add_sum_backward_ns", backward);
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("1-element add, median ns per op\n");
    std::printf("  with autograd (input requires grad): %8.1f\n", with_grad);
    std::printf("  under NoGradGuard:                   %8.1f\n", no_grad_mode);
    std::printf("  no input requires grad:              %8.1f\n", plain);
    std::printf("  add + sum + backward():              %8.1f\n", backward);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
