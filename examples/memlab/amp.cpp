// frugal-memlab amp: mixed precision. Autocast runs matmuls and convolutions in a 16-bit type
// and keeps what the graph saves for backward in it; the table shows the peak memory and the
// activations of one step, the speed of a short training run and the accuracy it reaches,
// for float32, bfloat16 and float16 (with loss scaling).
#include <algorithm>
#include <memory>

#include "common/progress.h"
#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {

int amp_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
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

  Report report("amp", model_name + ", batch " + std::to_string(batch) +
                           ": one step's memory, then " + std::to_string(steps) +
                           " training steps on Fashion-MNIST");
  report.columns({"precision", "activations", "peak allocated", "peak vs fp32", "ms/step",
                  "speed vs fp32", "final loss", "test accuracy"});
  // The three precisions train side by side, one step each in turn (A B C A B C ...), so
  // that the machine's load changes touch them alike; each from the same initial weights.
  const std::vector<train::AmpMode> modes{train::parse_amp("off"), train::parse_amp("bf16"),
                                          train::parse_amp("fp16")};
  struct Trainee {
    std::shared_ptr<nn::Sequential> model;
    std::unique_ptr<optim::SGD> sgd;
    std::unique_ptr<amp::GradScaler> scaler;
    double seconds = 0, loss_tail = 0;
  };
  std::vector<Trainee> trainees;
  for (const train::AmpMode& amp : modes) {
    manual_seed(0);
    Trainee t;
    t.model = nn::make_model(model_name);
    t.sgd =
        std::make_unique<optim::SGD>(t.model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    t.scaler =
        std::make_unique<amp::GradScaler>(amp::GradScalerOptions{.enabled = amp.needs_scaler()});
    trainees.push_back(std::move(t));
  }
  FRUGAL_CHECK(steps >= 2 && batch <= train_set.size(),
               "--steps must be >= 2 and --batch-size at most the training set");
  ProgressBar bar("train x3", static_cast<std::uint64_t>(steps));
  const std::int64_t tail = std::min<std::int64_t>(20, steps);
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::int64_t start = (s * batch) % (train_set.size() - batch + 1);
    const Tensor images = train_set.images(start, batch),
                 labels = train_set.labels.narrow(0, start, batch);
    for (std::size_t m = 0; m < modes.size(); ++m) {
      Trainee& t = trainees[m];
      const double begin = seconds_now();
      const train::StepResult r =
          train::train_step(*t.model, *t.sgd, *t.scaler, modes[m], images, labels, 1);
      if (s > 0) t.seconds += seconds_now() - begin;  // the first step (caches carved) is not timed
      if (s >= steps - tail)
        t.loss_tail += r.loss_sum / static_cast<double>(batch) / static_cast<double>(tail);
    }
    bar.update(static_cast<std::uint64_t>(s + 1));
  }
  bar.finish();

  train::StepMemory base;
  double base_ms = 0;
  for (std::size_t m = 0; m < modes.size(); ++m) {
    const train::AmpMode& amp = modes[m];
    const train::StepMemory mem = train::measure_step_memory(model_name, batch, amp);
    const double accuracy = evaluate(*trainees[m].model, test_set, amp);
    const double ms = 1e3 * trainees[m].seconds / static_cast<double>(steps - 1);
    if (m == 0) {
      base = mem;
      base_ms = ms;
    }
    const std::string label = amp.name == "off" ? "fp32" : amp.name;
    JsonWriter j;
    j.field("precision", label);
    j.field("activation_bytes", mem.activations);
    j.field("peak_allocated_bytes", mem.peak);
    j.field("peak_vs_fp32", static_cast<double>(mem.peak) / static_cast<double>(base.peak));
    j.field("ms_per_step", ms);
    j.field("final_loss", trainees[m].loss_tail);
    j.field("test_accuracy", accuracy);
    report.row(
        {label, bytes_text(mem.activations), bytes_text(mem.peak),
         number_text(static_cast<double>(mem.peak) / static_cast<double>(base.peak), 3) + "x",
         number_text(ms, 1), number_text(base_ms / ms, 2) + "x",
         number_text(trainees[m].loss_tail, 3), percent_text(accuracy)},
        j);
    report.figures().field(label + "_peak_bytes", mem.peak);
    report.figures().field(label + "_activation_bytes", mem.activations);
    report.figures().field(label + "_test_accuracy", accuracy);
    report.figures().field(label + "_ms_per_step", ms);
  }
  report.note(
      "memory: allocator counters of one SGD step (momentum) after a warm-up step; activations = "
      "bytes the "
      "graph holds after forward and loss; peak above what was allocated before the model was "
      "made");
  report.note(
      "training: SGD lr 0.05 momentum 0.9 from the same initial weights; final loss = mean of the "
      "last 20 "
      "steps, the three trained in turn step by step; accuracy on the first " +
      std::to_string(test_set.size()) + " test images under the same autocast");
  report.note(
      "ms/step is wall clock on a shared CPU machine, the first step not timed (it includes "
      "autocast's casts); a GPU's tensor cores "
      "are where 16-bit compute gains speed");
  report.figures().field("model", model_name);
  report.figures().field("steps", steps);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
