// frugal-bench-gemm: matrix multiply through frugal (mm on tensors, output taken from the
// caching allocator; float32 or bfloat16) against Eigen's float32 GEMM called directly on
// preallocated matrices, square sizes, at a given thread count. The two run alternately; the ratio
// is the median of the pairwise ratios, as bench/ protocol asks.
#include <Eigen/Core>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "common/cli.h"
#include "common/json_writer.h"
#include "engine/frugal.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/parallel.h"

using namespace frugal;

namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

int run(int argc, char** argv) {
  CommandLine cli("frugal-bench-gemm",
                  "GFLOP/s of an n x n GEMM through frugal::mm (float32 or bfloat16) and\n"
                  "of Eigen's float32 GEMM called directly, run alternately at one thread count.");
  cli.option("size", "N", "matrix size", "1024");
  cli.option("threads", "T", "threads for both", "1");
  cli.option("reps", "R", "timed pairs", "15");
  cli.option("dtype", "TYPE", "frugal's operands: float32 or bfloat16", "float32");
  cli.flag("json", "print the results as JSON");
  if (!cli.parse(argc, argv)) return 0;
  const std::int64_t n = cli.get_int("size");
  const int threads = static_cast<int>(cli.get_int("threads"));
  const int reps = static_cast<int>(cli.get_int("reps"));
  FRUGAL_CHECK(n > 0 && threads > 0 && reps > 0,
               "frugal-bench-gemm: size, threads and reps must be positive");
  const std::string dtype = cli.get("dtype");
  FRUGAL_CHECK(dtype == "float32" || dtype == "bfloat16",
               "frugal-bench-gemm: --dtype must be float32 or bfloat16, not '" + dtype + "'");
  kernels::cpu::set_num_threads(threads);
  Eigen::setNbThreads(threads);

  Generator gen(1);
  const Tensor a = randn({n, n}, {}, &gen), b = randn({n, n}, {}, &gen);
  const Eigen::Map<const RowMajor> ea(a.data_ptr<float>(), n, n), eb(b.data_ptr<float>(), n, n);
  RowMajor ec(n, n);
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);

  const bool bf16 = dtype == "bfloat16";
  const Tensor fa = bf16 ? a.to(kBFloat16) : a, fb = bf16 ? b.to(kBFloat16) : b;
  NoGradGuard no_grad;
  std::vector<double> f_gflops, e_gflops, ratios;
  for (int r = -2; r < reps; ++r) {  // two warm-up pairs
    double t0 = bench::now_ns();
    Tensor c = mm(fa, fb);
    const double tf = bench::now_ns() - t0;
    t0 = bench::now_ns();
    ec.noalias() = ea * eb;
    const double te = bench::now_ns() - t0;
    if (r < 0) continue;
    f_gflops.push_back(flops / tf);
    e_gflops.push_back(flops / te);
    ratios.push_back(te / tf);  // frugal throughput / Eigen throughput
  }
  const double fg = bench::median(f_gflops), eg = bench::median(e_gflops),
               ratio = bench::median(ratios);
  if (cli.has("json")) {
    JsonWriter j;
    j.field("cpu_isa", kernels::cpu::cpu_isa_name(kernels::cpu::cpu_isa()));
    j.field("size", n);
    j.field("dtype", dtype);
    j.field("threads", static_cast<std::int64_t>(threads));
    j.field("frugal_gflops", fg);
    j.field("eigen_gflops", eg);
    j.field("ratio", ratio);
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf(
        "%lld x %lld, %d thread(s): frugal %s %.1f GFLOP/s, Eigen float32 %.1f GFLOP/s, "
        "frugal/Eigen %.3f\n",
        static_cast<long long>(n), static_cast<long long>(n), threads, dtype.c_str(), fg, eg,
        ratio);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
