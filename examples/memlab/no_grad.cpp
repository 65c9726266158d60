// frugal-memlab no-grad: inference with autograd on keeps every activation the backward
// would need for as long as the output lives; NoGradGuard records nothing, so each layer's
// input is freed as soon as the next layer has run; InferenceMode also marks the outputs as
// never to be saved for backward. Same outputs, very different memory.
#include <cstring>

#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {

int no_grad_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "Peak allocated bytes of a forward pass in eval mode, and the bytes still held while its\n"
      "output lives, with autograd recording, under NoGradGuard and under InferenceMode; the\n"
      "outputs are compared bit for bit.");
  cli.option("model", "NAME", "cnn, mobilenet or mlp", "cnn");
  cli.option("batch-size", "N", "images", "256");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::int64_t batch = cli.get_int("batch-size");
  FRUGAL_CHECK(batch >= 1, "--batch-size must be >= 1");
  manual_seed(0);
  auto model = nn::make_model(cli.get("model"));
  model->eval();
  const Tensor x = randn({batch, 1, 28, 28});

  Report report("no-grad",
                cli.get("model") + ", eval mode, forward of " + std::to_string(batch) + " images");
  report.columns({"mode", "peak during forward", "held with the output", "peak vs autograd", "ms",
                  "output identical"});
  {
    NoGradGuard warm_up;  // the first forward carves the cache and touches fresh pages: not timed
    model->forward(x);
  }
  Tensor reference;
  std::int64_t base_peak = 0;
  for (const char* mode : {"autograd on", "NoGradGuard", "InferenceMode"}) {
    const std::string m = mode;
    const std::int64_t before = allocated_now();
    reset_peak();
    const double start = seconds_now();
    Tensor out;
    if (m == "NoGradGuard") {
      NoGradGuard guard;
      out = model->forward(x);
    } else if (m == "InferenceMode") {
      InferenceMode guard;
      out = model->forward(x);
    } else {
      out = model->forward(x);
    }
    const double ms = 1e3 * (seconds_now() - start);
    const std::int64_t peak = allocated_peak() - before, held = allocated_now() - before;
    if (m == "autograd on") {
      reference = out.detach().clone();
      base_peak = peak;
    }
    const bool identical =
        std::memcmp(out.data_ptr(), reference.data_ptr(), reference.nbytes()) == 0;
    JsonWriter j;
    j.field("mode", m);
    j.field("peak_bytes", peak);
    j.field("held_bytes", held);
    j.field("ms", ms);
    j.field("identical", identical);
    report.row({m, bytes_text(peak), bytes_text(held),
                number_text(static_cast<double>(peak) / static_cast<double>(base_peak), 3) + "x",
                number_text(ms, 1), identical ? "yes" : "NO"},
               j);
    std::string key =
        m == "autograd on" ? "autograd" : (m == "NoGradGuard" ? "no_grad" : "inference_mode");
    report.figures().field(key + "_peak_bytes", peak);
    report.figures().field(key + "_held_bytes", held);
    report.figures().field(key + "_identical", identical);
  }
  report.note(
      "bytes above what was allocated before the forward (the weights and the input are not "
      "counted)");
  report.note(
      "ms: wall clock of one forward each after an untimed warm-up forward, on a shared machine");
  report.note(
      "held with the output: with autograd on, the graph behind the output keeps the saved "
      "activations");
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
