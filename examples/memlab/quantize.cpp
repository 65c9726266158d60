// frugal-memlab quantize: dynamic int8 quantization of a trained mlp's Linear layers (weights
// stored in int8, activations quantized per row on the fly) against the float32 model: the
// bytes the weights take, the peak of an inference pass, its speed and the test accuracy.
#include <algorithm>
#include <vector>

#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {
namespace {

std::int64_t state_bytes(const nn::Module& model) {
  std::int64_t bytes = 0;
  for (const auto& [name, t] : model.state_dict()) bytes += static_cast<std::int64_t>(t.nbytes());
  return bytes;
}

// Seconds for one inference pass over `images` in batches of `batch`.
double pass_seconds(nn::Module& model, const data::MnistDataset& images, std::int64_t batch) {
  InferenceMode inference;
  const double t0 = seconds_now();
  for (std::int64_t start = 0; start < images.size(); start += batch) {
    const Tensor logits =
        model.forward(images.images(start, std::min(batch, images.size() - start)));
  }
  return seconds_now() - t0;
}

}  // namespace

int quantize_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "Trains the mlp for --steps SGD steps on Fashion-MNIST (the default is one epoch), then\n"
      "compares it with its dynamically quantized copy (nn::quantized::quantize_dynamic: int8\n"
      "Linear weights, per-row uint8 activations): weight bytes, the peak allocated of one\n"
      "inference pass at --infer-batch, inference images/s (median of --repeats passes over the\n"
      "test images, the two models interleaved) and test accuracy.");
  cli.option("steps", "N", "training steps at --batch-size (937 at 64: one epoch)", "937");
  cli.option("batch-size", "N", "training batch", "64");
  cli.option("infer-batch", "N", "inference batch", "512");
  cli.option("test", "N", "test images (0: all 10000)", "0");
  cli.option("repeats", "N", "timed passes over the test images per model", "5");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::int64_t steps = cli.get_int("steps"), batch = cli.get_int("batch-size");
  const std::int64_t infer_batch = cli.get_int("infer-batch"), repeats = cli.get_int("repeats");
  FRUGAL_CHECK(infer_batch >= 1, "quantize: --infer-batch must be at least 1");
  FRUGAL_CHECK(repeats >= 1, "quantize: --repeats must be at least 1");
  const data::MnistDataset train_set = load_fashion(data::Split::Train);
  const data::MnistDataset test_set = load_fashion(data::Split::Test, cli.get_int("test"));

  manual_seed(0);
  auto model = nn::make_model("mlp");
  train_and_evaluate(*model, train_set, test_set, steps, batch);
  model->eval();
  auto quantized = nn::quantized::quantize_dynamic(*model);

  struct Subject {
    const char* name;
    const char* key;  // the JSON figures' prefix
    nn::Module* model;
    std::int64_t weight_bytes = 0, peak = 0;
    double accuracy = 0;
    std::vector<double> seconds;
  };
  Subject subjects[] = {{"float32", "float32", model.get(), 0, 0, 0, {}},
                        {"dynamic int8", "int8", quantized.get(), 0, 0, 0, {}}};
  // The peak is measured on one batch of the test images (fewer if the test set is smaller).
  const std::int64_t peak_batch = std::min(infer_batch, test_set.size());
  const Tensor x = test_set.images(0, peak_batch);
  for (Subject& s : subjects) {
    s.weight_bytes = state_bytes(*s.model);
    inference_peak(*s.model, x);  // a warm-up pass: the caches are carved
    s.peak = inference_peak(*s.model, x);
    s.accuracy = evaluate(*s.model, test_set);
    s.model->eval();  // evaluate leaves the model in training mode
  }
  for (std::int64_t r = 0; r < repeats; ++r)  // interleaved: A B A B, as BENCHMARKS.md asks
    for (Subject& s : subjects) s.seconds.push_back(pass_seconds(*s.model, test_set, infer_batch));

  // How often the two models predict the same class.
  std::int64_t same = 0;
  {
    InferenceMode inference;
    for (std::int64_t start = 0; start < test_set.size(); start += 500) {
      const std::int64_t n = std::min<std::int64_t>(500, test_set.size() - start);
      const Tensor images = test_set.images(start, n);
      same += eq(argmax(model->forward(images), 1), argmax(quantized->forward(images), 1))
                  .sum()
                  .item<std::int64_t>();
    }
  }
  const double agreement = static_cast<double>(same) / static_cast<double>(test_set.size());

  Report report("quantize", "mlp after " + std::to_string(steps) + " SGD steps at batch " +
                                std::to_string(batch) + "; inference at batch " +
                                std::to_string(infer_batch) + " (peak: one batch of " +
                                std::to_string(peak_batch) + ")");
  report.columns({"model", "weight bytes", "inference peak", "images/s", "test accuracy"});
  for (const Subject& s : subjects) {
    const double ips = static_cast<double>(test_set.size()) / median(s.seconds);
    JsonWriter j;
    j.field("model", std::string(s.name));
    j.field("weight_bytes", s.weight_bytes);
    j.field("inference_peak_bytes", s.peak);
    j.field("images_per_sec", ips);
    j.field("test_accuracy", s.accuracy);
    report.row({s.name, bytes_text(s.weight_bytes), bytes_text(s.peak), number_text(ips, 0),
                percent_text(s.accuracy)},
               j);
    const std::string key = s.key;
    report.figures().field(key + "_weight_bytes", s.weight_bytes);
    report.figures().field(key + "_inference_peak_bytes", s.peak);
    report.figures().field(key + "_images_per_sec", ips);
    report.figures().field(key + "_test_accuracy", s.accuracy);
  }
  report.figures().field("prediction_agreement", agreement);
  report.figures().field("test_images", test_set.size());
  report.figures().field("peak_batch", peak_batch);
  report.note(
      "weight bytes: every tensor of the state_dict (int8: weights, float32 scales, int32 "
      "row sums, float32 biases)");
  report.note(
      "inference peak: allocated peak of one pass above the model and the batch "
      "(activations, logits, quantization temporaries)");
  report.note("the two models predict the same class on " + percent_text(agreement) + " of " +
              std::to_string(test_set.size()) + " test images; images/s is the median of " +
              std::to_string(repeats) + " passes, wall clock on a shared machine");
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
