// frugal-memlab accumulate: gradient accumulation. K micro-batches of B/K images, each loss
// weighted 1/K, add up to the gradients of one batch of B at the peak memory of a batch of
// B/K. frugal-train's own train_step does the accumulation; batch norm is in eval mode (running
// statistics), so both ways compute the same function and the gradients must agree.
#include <algorithm>
#include <cmath>

#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {
namespace {

struct Run {
  std::int64_t peak = 0;
  // Copied out of the allocator, so that one run's kept gradients do not count in the next
  // run's peak.
  std::vector<std::vector<float>> grads;
};

// train_step over `images` in `accum` micro-batches with an SGD of lr 0: the parameters stay
// put, and the gradients of the step are left in .grad() to compare. Run twice; the second
// (gradients already allocated, as in every step of training but the first) is measured.
Run accumulate(nn::Module& model, const Tensor& images, const Tensor& targets, std::int64_t accum) {
  optim::SGD sgd(model.parameters(), optim::SGDOptions(0.0));
  amp::GradScaler scaler(amp::GradScalerOptions{.enabled = false});
  const train::AmpMode fp32;
  Run r;
  train::train_step(model, sgd, scaler, fp32, images, targets, accum);
  reset_peak();
  train::train_step(model, sgd, scaler, fp32, images, targets, accum);
  r.peak = allocated_peak();
  for (const Tensor& p : model.parameters()) {
    const Tensor g = p.grad().contiguous();
    r.grads.emplace_back(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
  }
  return r;
}

double max_abs_difference(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t k = 0; k < a[i].size(); ++k)
      worst =
          std::max(worst, std::abs(static_cast<double>(a[i][k]) - static_cast<double>(b[i][k])));
  return worst;
}

double max_abs(const std::vector<std::vector<float>>& a) {
  double worst = 0;
  for (const auto& g : a)
    for (const float v : g) worst = std::max(worst, std::abs(static_cast<double>(v)));
  return worst;
}

}  // namespace

int accumulate_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "Gradients and peak allocated bytes of one float32 training step of a batch of\n"
      "--batch-size, whole and in --accum micro-batches (frugal-train's train_step), and of one\n"
      "micro-batch alone; batch norm in eval mode so that both compute the same function.");
  cli.option("model", "NAME", "cnn, mobilenet or mlp", "cnn");
  cli.option("batch-size", "N", "the whole batch", "128");
  cli.option("accum", "K", "micro-batches", "4");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::int64_t batch = cli.get_int("batch-size"), k = cli.get_int("accum");
  FRUGAL_CHECK(batch >= 1 && k >= 1 && batch % k == 0,
               "--batch-size must be a positive multiple of --accum");
  const std::int64_t micro = batch / k;

  manual_seed(0);
  auto model = nn::make_model(cli.get("model"));
  model->eval();  // batch norm on its running statistics: the same function for any split
  const Tensor images = randn({batch, 1, 28, 28});
  const Tensor targets = randint(0, 10, {batch});
  const Tensor small_images = images.narrow(0, 0, micro).contiguous();
  const Tensor small_targets = targets.narrow(0, 0, micro).contiguous();

  const Run whole = accumulate(*model, images, targets, 1);
  const Run accumulated = accumulate(*model, images, targets, k);
  const Run one_micro = accumulate(*model, small_images, small_targets, 1);
  const double diff = max_abs_difference(whole.grads, accumulated.grads);
  const double scale = max_abs(whole.grads);

  Report report("accumulate", cli.get("model") + ", float32, one training step: " +
                                  std::to_string(k) + " x " + std::to_string(micro) +
                                  " accumulated vs one batch of " + std::to_string(batch));
  report.columns({"step", "images", "peak allocated", "vs batch " + std::to_string(micro),
                  "max |grad - grad(whole)|"});
  const auto add = [&](const std::string& name, std::int64_t n, const Run& r,
                       const std::string& diff_text) {
    const double ratio = static_cast<double>(r.peak) / static_cast<double>(one_micro.peak);
    JsonWriter j;
    j.field("step", name);
    j.field("images", n);
    j.field("peak_allocated_bytes", r.peak);
    j.field("peak_vs_micro_batch", ratio);
    report.row(
        {name, std::to_string(n), bytes_text(r.peak), number_text(ratio, 3) + "x", diff_text}, j);
  };
  add("one batch of " + std::to_string(batch), batch, whole, "0 (reference)");
  add(std::to_string(k) + " x " + std::to_string(micro) + " accumulated", batch, accumulated,
      number_text(diff, 9));
  add("one batch of " + std::to_string(micro) + " alone", micro, one_micro, "- (other images)");
  report.note(
      "batch norm in eval mode (running statistics) so both ways compute the same function; in "
      "train mode "
      "each micro-batch would be normalised by its own statistics, as a smaller batch is");
  report.note("max |grad difference| " + number_text(diff, 9) +
              " (target <= 1e-5; largest |grad| " + number_text(scale, 6) +
              "): " + (diff <= 1e-5 ? "met" : "MISSED"));
  report.note("the accumulated step also holds the whole batch's input (" +
              bytes_text(images.nbytes()) + ") that the micro-batch-alone step does not");
  JsonWriter& f = report.figures();
  f.field("model", cli.get("model"));
  f.field("batch_size", batch);
  f.field("accum", k);
  f.field("max_abs_grad_difference", diff);
  f.field("max_abs_grad", scale);
  f.field("whole_peak_bytes", whole.peak);
  f.field("accumulated_peak_bytes", accumulated.peak);
  f.field("micro_batch_peak_bytes", one_micro.peak);
  f.field("within_1e-5", diff <= 1e-5);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
