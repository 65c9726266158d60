// frugal-bench-conv: forward and forward+backward time of each convolution layer of the cnn
// and mobilenet models at a batch size, through frugal's conv2d and autograd (backward
// computes the weight gradient and, past the first layer, the input gradient).
#include <cstdio>
#include <string>

#include "bench/bench_timing.h"
#include "bench/conv_shapes.h"
#include "common/cli.h"
#include "common/json_writer.h"
#include "engine/frugal.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/parallel.h"

using namespace frugal;

namespace {

int run(int argc, char** argv) {
  CommandLine cli("frugal-bench-conv",
                  "Milliseconds per conv2d forward and forward+backward for the layers of a\n"
                  "benchmark model (median of the repeats).");
  cli.option("model", "NAME", "cnn or mobilenet", "cnn");
  cli.option("batch", "N", "batch size", "128");
  cli.option("threads", "T", "threads", "2");
  cli.option("reps", "R", "timed repeats per layer", "10");
  cli.option("dtype", "TYPE", "element type of input, weight and gradient: float32 or bfloat16",
             "float32");
  cli.flag("json", "print the results as JSON");
  if (!cli.parse(argc, argv)) return 0;
  const std::string model = cli.get("model");
  const auto shapes = bench::conv_shapes(model);
  FRUGAL_CHECK(!shapes.empty(),
               "frugal-bench-conv: unknown model '" + model + "' (cnn or mobilenet)");
  const std::int64_t batch = cli.get_int("batch");
  const int reps = static_cast<int>(cli.get_int("reps"));
  kernels::cpu::set_num_threads(static_cast<int>(cli.get_int("threads")));
  const std::string dtype_name = cli.get("dtype");
  FRUGAL_CHECK(dtype_name == "float32" || dtype_name == "bfloat16",
               "frugal-bench-conv: --dtype must be float32 or bfloat16, got '" + dtype_name + "'");
  const ScalarType dtype = dtype_name == "bfloat16" ? kBFloat16 : kFloat32;

  Generator gen(1);
  std::vector<std::string> rows;
  double total_fwd = 0, total_fwd_bwd = 0;
  for (const auto& s : shapes) {
    Tensor x = randn({batch, s.in_channels, s.size, s.size}, {}, &gen).to(dtype);
    if (s.input_needs_grad) x.requires_grad_();
    const Tensor w =
        mul(randn({s.out_channels, s.in_channels / s.groups, s.kernel, s.kernel}, {}, &gen), 0.1)
            .to(dtype)
            .requires_grad_();
    const Int2 stride{s.stride, s.stride}, pad{s.padding, s.padding};
    Tensor g;
    {
      NoGradGuard no_grad;
      g = randn(conv2d(x, w, {}, stride, pad, {1, 1}, s.groups).sizes(), {}, &gen).to(dtype);
    }
    const double fwd = bench::median_ns(2, reps, [&] {
      NoGradGuard no_grad;
      Tensor y = conv2d(x, w, {}, stride, pad, {1, 1}, s.groups);
    });
    const double fwd_bwd = bench::median_ns(2, reps, [&] {
      Tensor y = conv2d(x, w, {}, stride, pad, {1, 1}, s.groups);
      y.backward(g);
    });
    total_fwd += fwd;
    total_fwd_bwd += fwd_bwd;
    JsonWriter row;
    row.field("layer", s.name);
    row.field("forward_ms", fwd / 1e6);
    row.field("forward_backward_ms", fwd_bwd / 1e6);
    rows.push_back(row.str());
    if (!cli.has("json"))
      std::printf("%-24s forward %8.3f ms   forward+backward %8.3f ms\n", s.name.c_str(), fwd / 1e6,
                  fwd_bwd / 1e6);
  }
  if (cli.has("json")) {
    JsonWriter j;
    j.field("cpu_isa", kernels::cpu::cpu_isa_name(kernels::cpu::cpu_isa()));
    j.field("model", model);
    j.field("dtype", dtype_name);
    j.field("batch", batch);
    j.raw("layers", JsonWriter::array(rows));
    j.field("total_forward_ms", total_fwd / 1e6);
    j.field("total_forward_backward_ms", total_fwd_bwd / 1e6);
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("%-24s forward %8.3f ms   forward+backward %8.3f ms\n", "all layers",
                total_fwd / 1e6, total_fwd_bwd / 1e6);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
