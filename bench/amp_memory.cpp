// frugal-bench-amp-memory: what mixed precision saves in one training step of a benchmark
// model, from the CPU allocator's exact counters: the peak allocated bytes of the step, the
// bytes the graph holds for backward once forward and loss are done (the activations), and
// each as a fraction of float32's. Memory, unlike time, does not depend on the machine's load.
#include <cstdio>
#include <string>
#include <vector>

#include "allocator/default_allocators.h"
#include "common/cli.h"
#include "common/format.h"
#include "common/json_writer.h"
#include "examples/train/step.h"
#include "nn/nn.h"

using namespace frugal;

namespace {

// A table row: the --amp mode and what its step holds.
struct Row {
  std::string amp;
  train::StepMemory memory;
};

int run(int argc, char** argv) {
  CommandLine cli("frugal-bench-amp-memory",
                  "Peak allocated bytes and activation bytes of one training step in float32,\n"
                  "bfloat16 and float16 autocast, from the allocator's counters.");
  cli.option("model", "NAME", "cnn, mobilenet or mlp", "cnn");
  cli.option("batch-size", "N", "images per step", "128");
  cli.flag("json", "print the results as JSON");
  if (!cli.parse(argc, argv)) return 0;
  const std::string model = cli.get("model");
  const std::int64_t batch = cli.get_int("batch-size");
  std::vector<Row> rows;
  for (const char* amp : {"off", "bf16", "fp16"})
    rows.push_back({amp, train::measure_step_memory(model, batch, train::parse_amp(amp))});
  const train::StepMemory& base = rows.front().memory;
  auto frac = [](std::int64_t a, std::int64_t b) {
    return static_cast<double>(a) / static_cast<double>(b);
  };
  if (cli.has("json")) {
    std::vector<std::string> items;
    for (const auto& r : rows) {
      JsonWriter j;
      j.field("amp", r.amp);
      j.field("before_step_bytes", r.memory.before);
      j.field("activation_bytes", r.memory.activations);
      j.field("peak_allocated_bytes", r.memory.peak);
      j.field("activation_fraction", frac(r.memory.activations, base.activations));
      j.field("peak_fraction", frac(r.memory.peak, base.peak));
      j.field("step_fraction", frac(r.memory.peak - r.memory.before, base.peak - base.before));
      items.push_back(j.str());
    }
    JsonWriter out;
    out.field("model", model);
    out.field("batch_size", batch);
    out.raw("modes", JsonWriter::array(items));
    std::printf("%s\n", out.str().c_str());
    return 0;
  }
  std::printf("%s, batch %lld, one SGD step (momentum), CPU allocator counters\n", model.c_str(),
              static_cast<long long>(batch));
  std::printf("%-5s | %14s | %22s | %22s | %22s\n", "amp", "before step", "activations (graph)",
              "step peak - before", "peak allocated");
  for (const auto& r : rows)
    std::printf("%-5s | %14s | %12s (%5.3fx) | %12s (%5.3fx) | %12s (%5.3fx)\n", r.amp.c_str(),
                format_bytes(r.memory.before).c_str(), format_bytes(r.memory.activations).c_str(),
                frac(r.memory.activations, base.activations),
                format_bytes(r.memory.peak - r.memory.before).c_str(),
                frac(r.memory.peak - r.memory.before, base.peak - base.before),
                format_bytes(r.memory.peak).c_str(), frac(r.memory.peak, base.peak));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
