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

std::int64_t allocated_now() {
  return alloc::cpu_allocator().stats().allocated_bytes.all().current;
}
std::int64_t allocated_peak() { return alloc::cpu_allocator().stats().allocated_bytes.all().peak; }

struct StepMemory {
  std::string amp;
  std::int64_t before = 0;       // parameters, optimizer state, the batch
  std::int64_t activations = 0;  // held by the graph after forward and loss (casts included)
  std::int64_t peak = 0;         // the step's peak allocated, all included
};

// One SGD step of `model_name` at `batch` under --amp `amp`, after a warm-up step (so the
// momentum buffers exist, as in every step but the first).
StepMemory measure(const std::string& model_name, std::int64_t batch, const train::AmpMode& amp) {
  manual_seed(0);
  auto model = nn::make_model(model_name);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions{.enabled = amp.needs_scaler()});
  const Tensor x = randn({batch, 1, 28, 28});
  const Tensor y = randint(0, 10, {batch});
  StepMemory m;
  m.amp = amp.name;
  for (int step = 0; step < 2; ++step) {
    sgd.zero_grad();
    const bool timed = step == 1;
    if (timed) {
      m.before = allocated_now();
      alloc::cpu_allocator().reset_peak_memory_stats();
    }
    Tensor loss;
    {
      AutocastGuard autocast(kCPU, amp.dtype, amp.enabled());
      loss = cross_entropy(model->forward(x), y);
    }
    if (timed) m.activations = allocated_now() - m.before;
    scaler.scale(loss).backward();
    scaler.step(sgd);
    scaler.update();
    if (timed) m.peak = allocated_peak();
  }
  return m;
}

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
  std::vector<StepMemory> rows;
  for (const char* amp : {"off", "bf16", "fp16"})
    rows.push_back(measure(model, batch, train::parse_amp(amp)));
  const StepMemory& base = rows.front();
  auto frac = [](std::int64_t a, std::int64_t b) {
    return static_cast<double>(a) / static_cast<double>(b);
  };
  if (cli.has("json")) {
    std::string items;
    for (const auto& r : rows) {
      JsonWriter j;
      j.field("amp", r.amp);
      j.field("before_step_bytes", r.before);
      j.field("activation_bytes", r.activations);
      j.field("peak_allocated_bytes", r.peak);
      j.field("activation_fraction", frac(r.activations, base.activations));
      j.field("peak_fraction", frac(r.peak, base.peak));
      j.field("step_fraction", frac(r.peak - r.before, base.peak - base.before));
      if (!items.empty()) items += ',';
      items += j.str();
    }
    JsonWriter out;
    out.field("model", model);
    out.field("batch_size", batch);
    out.raw("modes", "[" + items + "]");
    std::printf("%s\n", out.str().c_str());
    return 0;
  }
  std::printf("%s, batch %lld, one SGD step (momentum), CPU allocator counters\n", model.c_str(),
              static_cast<long long>(batch));
  std::printf("%-5s | %14s | %22s | %22s | %22s\n", "amp", "before step", "activations (graph)",
              "step peak - before", "peak allocated");
  for (const auto& r : rows)
    std::printf("%-5s | %14s | %12s (%5.3fx) | %12s (%5.3fx) | %12s (%5.3fx)\n", r.amp.c_str(),
                format_bytes(r.before).c_str(), format_bytes(r.activations).c_str(),
                frac(r.activations, base.activations), format_bytes(r.peak - r.before).c_str(),
                frac(r.peak - r.before, base.peak - base.before), format_bytes(r.peak).c_str(),
                frac(r.peak, base.peak));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
