// frugal-memlab prune: magnitude pruning of a trained mlp (nn::utils::prune). Unstructured
// pruning at 50/80/90% zeros keeps every dense byte (plus a mask while pruned); structured
// pruning of 25/50% of the hidden units, shrunk away, makes the model and its activations smaller.
#include <algorithm>
#include <string>
#include <vector>

#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {
namespace {

namespace prune = nn::utils::prune;

std::int64_t parameter_bytes(const nn::Module& model) {
  std::int64_t bytes = 0;
  for (const Tensor& p : model.parameters()) bytes += static_cast<std::int64_t>(p.nbytes());
  return bytes;
}

// Allocated bytes at the peak of one inference pass over `x`, above what was allocated before
// it (the model and the batch): activations and logits.
std::int64_t inference_peak(nn::Module& model, const Tensor& x) {
  InferenceMode inference;
  const std::int64_t before = allocated_now();
  reset_peak();
  { const Tensor logits = model.forward(x); }
  return allocated_peak() - before;
}

// The mlp's Linear layers (children 1, 3 and 5) and the two hidden ones.
nn::Linear& linear(nn::Sequential& model, std::size_t index) {
  return static_cast<nn::Linear&>(*model[index]);
}
constexpr std::size_t kLinears[] = {1, 3, 5};

std::int64_t zero_weights(nn::Sequential& model) {
  std::int64_t zeros = 0;
  for (std::size_t i : kLinears)
    zeros += eq(linear(model, i).weight.detach(), zeros_like(linear(model, i).weight))
                 .sum()
                 .item<std::int64_t>();
  return zeros;
}

// Where each Linear weight is zero now (1.0 there, 0.0 elsewhere).
std::vector<Tensor> zero_positions(nn::Sequential& model) {
  std::vector<Tensor> out;
  for (std::size_t i : kLinears) {
    const Tensor w = linear(model, i).weight.detach();
    out.push_back(eq(w, zeros_like(w)).to(w.dtype()));
  }
  return out;
}

// Whether every weight that was zero at `positions` still is.
bool still_zero(nn::Sequential& model, const std::vector<Tensor>& positions) {
  std::size_t k = 0;
  for (std::size_t i : kLinears) {
    const Tensor w = linear(model, i).weight.detach();
    if (mul(abs(w), positions[k++]).sum().item<double>() != 0.0) return false;
  }
  return true;
}

std::int64_t weight_count(nn::Sequential& model) {
  std::int64_t n = 0;
  for (std::size_t i : kLinears) n += linear(model, i).weight.numel();
  return n;
}

std::shared_ptr<nn::Sequential> copy_of(const nn::Sequential& trained) {
  auto model = nn::make_model("mlp");
  model->load_state_dict(trained.state_dict());
  return model;
}

}  // namespace

int prune_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "Trains the mlp for --steps SGD steps on Fashion-MNIST (the default is one epoch), then\n"
      "prunes copies of it: unstructured (global L1 over the three Linear weights) to 50, 80\n"
      "and 90% zeros, and structured (the hidden units with the smallest L2 weight rows, 25 and\n"
      "50% of each hidden layer), those units then removed with shrink_pruned_units. Each is\n"
      "fine-tuned for --finetune-steps, the dense model too (unstructured ones with their masks\n"
      "on, so the zeros stay). Table: hidden units, zero weights, parameter bytes, mask bytes,\n"
      "the peak allocated of one inference pass at --infer-batch, test accuracy right after\n"
      "pruning and after the fine-tune.");
  cli.option("steps", "N", "training steps at --batch-size (937 at 64: one epoch)", "937");
  cli.option("finetune-steps", "N", "fine-tuning steps after pruning (0: none)", "200");
  cli.option("batch-size", "N", "training batch", "64");
  cli.option("infer-batch", "N", "inference batch for the peak", "512");
  cli.option("test", "N", "test images (0: all 10000)", "0");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::int64_t steps = cli.get_int("steps"), batch = cli.get_int("batch-size");
  const std::int64_t finetune = cli.get_int("finetune-steps");
  const std::int64_t infer_batch = cli.get_int("infer-batch");
  FRUGAL_CHECK(infer_batch >= 1, "prune: --infer-batch must be at least 1");
  FRUGAL_CHECK(finetune >= 0, "prune: --finetune-steps must be at least 0");
  const data::MnistDataset train_set = load_fashion(data::Split::Train);
  const data::MnistDataset test_set = load_fashion(data::Split::Test, cli.get_int("test"));
  const std::int64_t peak_batch = std::min(infer_batch, test_set.size());
  const Tensor x = test_set.images(0, peak_batch);

  manual_seed(0);
  auto trained = nn::make_model("mlp");
  train_and_evaluate(*trained, train_set, test_set, steps, batch);

  struct Variant {
    std::string name, key;
    double amount;
    bool structured;
  };
  const std::vector<Variant> variants = {{"dense", "dense", 0.0, false},
                                         {"unstructured 50%", "unstructured_50", 0.5, false},
                                         {"unstructured 80%", "unstructured_80", 0.8, false},
                                         {"unstructured 90%", "unstructured_90", 0.9, false},
                                         {"structured 25%, shrunk", "structured_25", 0.25, true},
                                         {"structured 50%, shrunk", "structured_50", 0.5, true}};
  Report report("prune", "mlp after " + std::to_string(steps) + " SGD steps at batch " +
                             std::to_string(batch) + ", pruned, fine-tuned " +
                             std::to_string(finetune) + " steps; peak: one batch of " +
                             std::to_string(peak_batch));
  report.columns({"model", "hidden units", "zero weights", "parameter bytes", "mask bytes",
                  "inference peak", "accuracy pruned", "accuracy fine-tuned"});
  bool zeros_kept = true;
  for (const Variant& v : variants) {
    auto model = copy_of(*trained);
    const std::int64_t before = allocated_now();
    std::int64_t mask_bytes = 0;
    if (v.structured) {
      for (std::size_t i : {std::size_t{1}, std::size_t{3}}) {
        prune::ln_structured(linear(*model, i), "weight", v.amount, 2, 0);
        prune::remove(linear(*model, i), "weight");
      }
      model = prune::shrink_pruned_units(*model);
    } else if (v.amount > 0) {
      prune::global_unstructured({{&linear(*model, 1), "weight"},
                                  {&linear(*model, 3), "weight"},
                                  {&linear(*model, 5), "weight"}},
                                 v.amount);
      mask_bytes = allocated_now() - before;  // the masks the gradient hooks hold
    }
    const double sparsity =
        static_cast<double>(zero_weights(*model)) / static_cast<double>(weight_count(*model));
    const std::vector<Tensor> pruned_positions = zero_positions(*model);
    const std::int64_t bytes = parameter_bytes(*model);
    const std::int64_t hidden = linear(*model, 1).out_features + linear(*model, 3).out_features;
    inference_peak(*model, x);  // a warm-up pass: the caches are carved
    const std::int64_t peak = inference_peak(*model, x);
    const double accuracy = evaluate(*model, test_set);
    double tuned = accuracy;
    if (finetune > 0)  // the dense model too: the same extra steps for every row
      tuned = train_and_evaluate(*model, train_set, test_set, finetune, batch).test_accuracy;
    // With its masks on, every zero of an unstructured model survives the fine-tune.
    if (!v.structured && !still_zero(*model, pruned_positions)) zeros_kept = false;

    JsonWriter j;
    j.field("model", v.name);
    j.field("hidden_units", hidden);
    j.field("zero_weight_fraction", sparsity);
    j.field("parameter_bytes", bytes);
    j.field("mask_bytes", mask_bytes);
    j.field("inference_peak_bytes", peak);
    j.field("test_accuracy", accuracy);
    j.field("finetuned_test_accuracy", tuned);
    report.row(
        {v.name, std::to_string(hidden), percent_text(sparsity), bytes_text(bytes),
         bytes_text(mask_bytes), bytes_text(peak), percent_text(accuracy), percent_text(tuned)},
        j);
    report.figures().field(v.key + "_parameter_bytes", bytes);
    report.figures().field(v.key + "_mask_bytes", mask_bytes);
    report.figures().field(v.key + "_inference_peak_bytes", peak);
    report.figures().field(v.key + "_zero_weight_fraction", sparsity);
    report.figures().field(v.key + "_hidden_units", hidden);
    report.figures().field(v.key + "_test_accuracy", accuracy);
    report.figures().field(v.key + "_finetuned_test_accuracy", tuned);
  }
  report.figures().field("zeros_kept_through_finetune", zeros_kept);
  report.figures().field("test_images", test_set.size());
  report.figures().field("peak_batch", peak_batch);
  report.note(
      "unstructured: zeros in a dense tensor save no byte; while pruned each weight also has a "
      "float32 mask (remove() frees it)");
  report.note(
      "structured: whole hidden units (weight rows) zeroed, then removed from the Linear "
      "before and after them (shrink_pruned_units): smaller weights and activations");
  report.note(
      "inference peak: allocated peak of one pass above the model and the batch (activations, "
      "logits); fine-tune: the same SGD steps from the training set's start for every row, "
      "the dense one included");
  report.note(std::string("the unstructured models' zeros ") +
              (zeros_kept ? "all stayed zero" : "did NOT all stay zero") +
              " through the fine-tune");
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
