// frugal-memlab amp: mixed precision. Autocast runs matmuls and convolutions in a 16-bit type
// and keeps what the graph saves for backward in it; the table shows the peak memory and the
// activations of one step, the speed of a short training run and the accuracy it reaches,
// for float32, bfloat16 and float16 (with loss scaling).
#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {
namespace {

struct StepMemory {
  std::int64_t before = 0, activations = 0, peak = 0;
};

// One step (SGD with momentum, through the GradScaler) after a warm-up step, as
// bench/amp_memory.cpp measures it: bytes before, held by the graph after forward, and peak.
StepMemory step_memory(const std::string& model_name, std::int64_t batch, const train::AmpMode& amp) {
  const std::int64_t base = allocated_now();  // the data sets are not counted
  manual_seed(0);
  auto model = nn::make_model(model_name);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions{.enabled = amp.needs_scaler()});
  const Tensor x = randn({batch, 1, 28, 28});
  const Tensor y = randint(0, 10, {batch});
  StepMemory m;
  for (int step = 0; step < 2; ++step) {
    sgd.zero_grad();
    const bool measured = step == 1;
    if (measured) {
      m.before = allocated_now();
      reset_peak();
    }
    Tensor loss;
    {
      AutocastGuard autocast(kCPU, amp.dtype, amp.enabled());
      loss = cross_entropy(model->forward(x), y);
    }
    if (measured) m.activations = allocated_now() - m.before;
    scaler.scale(loss).backward();
    scaler.step(sgd);
    scaler.update();
    if (measured) m.peak = allocated_peak() - base;
  }
  return m;
}

}  // namespace

int amp_lab(int argc, char** argv) {
  CommandLine cli(argv[0],
                  "float32, bfloat16 and float16 autocast (float16 with a GradScaler): peak allocated and\n"
                  "activation bytes of one step, then --steps training steps on Fashion-MNIST each (time\n"
                  "per step) and the test accuracy reached on --test images.");
  cli.option("model", "NAME", "cnn, mobilenet or mlp", "cnn");
  cli.option("batch-size", "N", "images per step", "32");
  cli.option("steps", "N", "training steps per precision", "100");
  cli.option("test", "N", "test images for the accuracy", "2000");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::string model_name = cli.get("model");
  const std::int64_t batch = cli.get_int("batch-size"), steps = cli.get_int("steps");
  const data::MnistDataset train_set = load_fashion(data::Split::Train);
  const data::MnistDataset test_set = load_fashion(data::Split::Test, cli.get_int("test"));

  Report report("amp", model_name + ", batch " + std::to_string(batch) + ": one step's memory, then " +
                           std::to_string(steps) + " training steps on Fashion-MNIST");
  report.columns({"precision", "activations", "peak allocated", "peak vs fp32", "ms/step", "speed vs fp32",
                  "final loss", "test accuracy"});
  StepMemory base;
  double base_ms = 0;
  for (const char* name : {"off", "bf16", "fp16"}) {
    const train::AmpMode amp = train::parse_amp(name);
    const StepMemory m = step_memory(model_name, batch, amp);
    manual_seed(0);
    auto model = nn::make_model(model_name);
    const TrainResult t = train_and_evaluate(*model, train_set, test_set, steps, batch, amp);
    const double ms = 1e3 * t.seconds_per_step;
    if (amp.name == "off") {
      base = m;
      base_ms = ms;
    }
    const std::string label = amp.name == "off" ? "fp32" : amp.name;
    JsonWriter j;
    j.field("precision", label);
    j.field("activation_bytes", m.activations);
    j.field("peak_allocated_bytes", m.peak);
    j.field("peak_vs_fp32", static_cast<double>(m.peak) / static_cast<double>(base.peak));
    j.field("ms_per_step", ms);
    j.field("final_loss", t.last_loss);
    j.field("test_accuracy", t.test_accuracy);
    report.row({label, bytes_text(m.activations), bytes_text(m.peak),
                number_text(static_cast<double>(m.peak) / static_cast<double>(base.peak), 3) + "x", number_text(ms, 1),
                number_text(base_ms / ms, 2) + "x", number_text(t.last_loss, 3), percent_text(t.test_accuracy)},
               j);
    report.figures().field(label + "_peak_bytes", m.peak);
    report.figures().field(label + "_test_accuracy", t.test_accuracy);
    report.figures().field(label + "_ms_per_step", ms);
  }
  report.note("memory: allocator counters of one SGD step (momentum) after a warm-up step; activations = bytes the "
              "graph holds after forward and loss; peak above what was allocated before the model was made");
  report.note("training: SGD lr 0.05 momentum 0.9 from the same initial weights; final loss = mean of the last 20 "
              "steps; accuracy on the first " + std::to_string(test_set.size()) + " test images under the same autocast");
  report.note("ms/step is wall clock on a shared CPU machine, the first step not timed (it includes autocast's casts); a GPU's tensor cores "
              "are where 16-bit compute gains speed");
  report.figures().field("model", model_name);
  report.figures().field("steps", steps);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
