// frugal-memlab architectures: the three benchmark models side by side. Parameters (and so
// weights, gradients and optimizer state) are one part of training memory; the activations a
// step keeps for backward are the other, and depend on the architecture far more than the
// parameter count suggests. Each model is also trained briefly to show what it buys.
#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {

int architectures_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "mlp, cnn and mobilenet: parameters, the activation bytes and peak allocated of one float32\n"
      "training step at --batch-size, and the test accuracy after --steps SGD steps on "
      "Fashion-MNIST.");
  cli.option("models", "NAMES", "comma-separated", "mlp,cnn,mobilenet");
  cli.option("batch-size", "N", "images per step", "32");
  cli.option("steps", "N", "training steps per model", "100");
  cli.option("test", "N", "test images for the accuracy", "2000");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::int64_t batch = cli.get_int("batch-size"), steps = cli.get_int("steps");
  const data::MnistDataset train_set = load_fashion(data::Split::Train);
  const data::MnistDataset test_set = load_fashion(data::Split::Test, cli.get_int("test"));

  Report report("architectures", "batch " + std::to_string(batch) + ", float32, then " +
                                     std::to_string(steps) + " SGD steps on Fashion-MNIST each");
  report.columns({"model", "parameters", "weights", "activations (one step)", "step peak",
                  "ms/step", "test accuracy"});
  std::string names = cli.get("models");
  for (std::size_t pos = 0; pos <= names.size();) {
    const std::size_t comma = std::min(names.find(',', pos), names.size());
    const std::string name = names.substr(pos, comma - pos);
    pos = comma + 1;
    const std::int64_t base = allocated_now();  // the data sets and other models not counted
    manual_seed(0);
    auto model = nn::make_model(name);
    std::int64_t params = 0, weight_bytes = 0;
    for (const Tensor& p : model->parameters()) {
      params += p.numel();
      weight_bytes += static_cast<std::int64_t>(p.nbytes());
    }
    // One step after a warm-up step (gradients and momentum live): activations = bytes the
    // graph holds after forward and loss; the peak of the step above what was allocated before.
    std::int64_t activations = 0, peak = 0;
    {
      optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
      const Tensor x = randn({batch, 1, 28, 28});
      const Tensor y = randint(0, 10, {batch});
      for (int s = 0; s < 2; ++s) {
        sgd.zero_grad();
        const std::int64_t before = allocated_now();
        reset_peak();
        Tensor loss = cross_entropy(model->forward(x), y);
        activations = allocated_now() - before;
        loss.backward();
        sgd.step();
        peak = allocated_peak() - base;
      }
    }
    manual_seed(0);
    model = nn::make_model(name);
    const TrainResult t = train_and_evaluate(*model, train_set, test_set, steps, batch);
    const double ms = 1e3 * t.seconds_per_step;
    JsonWriter j;
    j.field("model", name);
    j.field("parameters", params);
    j.field("weight_bytes", weight_bytes);
    j.field("activation_bytes", activations);
    j.field("step_peak_bytes", peak);
    j.field("ms_per_step", ms);
    j.field("final_loss", t.last_loss);
    j.field("test_accuracy", t.test_accuracy);
    report.row({name, std::to_string(params), bytes_text(weight_bytes), bytes_text(activations),
                bytes_text(peak), number_text(ms, 1), percent_text(t.test_accuracy)},
               j);
    report.figures().field(name + "_parameters", params);
    report.figures().field(name + "_activation_bytes", activations);
    report.figures().field(name + "_test_accuracy", t.test_accuracy);
  }
  report.note(
      "step peak: allocated peak during the step above what was allocated before the model was "
      "made "
      "(weights, gradients, momentum, the batch and the activations)");
  report.note("accuracy on the first " + std::to_string(test_set.size()) + " test images after " +
              std::to_string(steps) +
              " steps (SGD lr 0.05, momentum 0.9); ms/step is wall clock on a shared machine, the "
              "first step not timed");
  report.figures().field("steps", steps);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
