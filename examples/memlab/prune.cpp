// frugal-memlab prune: magnitude pruning of a trained mlp or cnn (nn::utils::prune).
// Unstructured pruning at 50/80/90% zeros keeps every dense byte (plus a mask while pruned);
// structured pruning of 25/50% of the hidden units and channels, shrunk away, makes the model
// and its activations smaller.
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

// The weight of every Linear and Conv2d child: what pruning works on.
std::vector<Tensor> weights(const nn::Sequential& model) {
  std::vector<Tensor> out;
  for (const auto& [name, child] : model.named_children()) {
    if (const auto* linear = dynamic_cast<const nn::Linear*>(child.get()))
      out.push_back(linear->weight);
    else if (const auto* conv = dynamic_cast<const nn::Conv2d*>(child.get()))
      out.push_back(conv->weight);
  }
  return out;
}

std::int64_t zero_weights(const nn::Sequential& model) {
  std::int64_t zeros = 0;
  for (const Tensor& w : weights(model)) zeros += eq(w.detach(), 0.0).sum().item<std::int64_t>();
  return zeros;
}

std::int64_t weight_count(const nn::Sequential& model) {
  std::int64_t n = 0;
  for (const Tensor& w : weights(model)) n += w.numel();
  return n;
}

// Where each weight is zero now (1 there, 0 elsewhere).
std::vector<Tensor> zero_positions(const nn::Sequential& model) {
  std::vector<Tensor> out;
  for (const Tensor& w : weights(model)) out.push_back(eq(w.detach(), 0.0).to(w.dtype()));
  return out;
}

// Whether every weight that was zero at `positions` still is.
bool still_zero(const nn::Sequential& model, const std::vector<Tensor>& positions) {
  const std::vector<Tensor> now = weights(model);
  for (std::size_t k = 0; k < now.size(); ++k)
    if (mul(abs(now[k].detach()), positions[k]).sum().item<double>() != 0.0) return false;
  return true;
}

// Hidden units and channels: the outputs of every Linear and Conv2d but the last layer.
std::int64_t hidden_width(const nn::Sequential& model) {
  std::int64_t width = 0, last = 0;
  for (const auto& [name, child] : model.named_children()) {
    if (const auto* linear = dynamic_cast<const nn::Linear*>(child.get()))
      width += last = linear->out_features;
    else if (const auto* conv = dynamic_cast<const nn::Conv2d*>(child.get()))
      width += last = conv->options.out_channels_;
  }
  return width - last;
}

// Structured pruning of `amount` of every hidden layer's outputs by the L2 norm of their
// weights, made permanent: a Conv2d's zeroed channels also get zero BatchNorm2d weight and
// bias (so shrink_pruned_units can remove them); the last layer (the classes) is left whole.
void prune_structured(nn::Sequential& model, double amount) {
  const auto& children = model.named_children();
  std::size_t last = 0;
  for (std::size_t i = 0; i < children.size(); ++i)
    if (dynamic_cast<nn::Linear*>(children[i].second.get())) last = i;
  for (std::size_t i = 0; i < last; ++i) {
    nn::Module& layer = *children[i].second;
    if (auto* conv = dynamic_cast<nn::Conv2d*>(&layer)) {
      prune::ln_structured(*conv, "weight", amount, 2, 0);
      prune::remove(*conv, "weight");
      auto* bn = i + 1 < children.size()
                     ? dynamic_cast<nn::BatchNorm2d*>(children[i + 1].second.get())
                     : nullptr;
      if (bn && bn->options.affine_) {
        const Tensor live = ne(abs(conv->weight.detach()).sum({1, 2, 3}), 0.0).to(kFloat32);
        for (const char* name : {"weight", "bias"}) {
          prune::custom_from_mask(*bn, name, live);
          prune::remove(*bn, name);
        }
      }
    } else if (auto* linear = dynamic_cast<nn::Linear*>(&layer)) {
      prune::ln_structured(*linear, "weight", amount, 2, 0);
      prune::remove(*linear, "weight");
    }
  }
}

std::shared_ptr<nn::Sequential> copy_of(const std::string& name, const nn::Sequential& trained) {
  auto model = nn::make_model(name);
  model->load_state_dict(trained.state_dict());
  return model;
}

}  // namespace

int prune_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "Trains --model (the mlp or the cnn) for --steps SGD steps on Fashion-MNIST (the default\n"
      "is one epoch), then prunes copies of it: unstructured (global L1 over every Linear and\n"
      "Conv2d weight) to 50, 80 and 90% zeros, and structured (25 and 50% of each hidden layer's\n"
      "units or channels by the L2 norm of their weights; a channel's BatchNorm2d weight and bias\n"
      "with it), then removed with shrink_pruned_units. Each is fine-tuned for --finetune-steps,\n"
      "the dense model too (unstructured ones with their masks on, so the zeros stay). Table:\n"
      "hidden units/channels, zero weights, parameter bytes, mask bytes, the peak allocated of\n"
      "one inference pass at --infer-batch, test accuracy after pruning and after the fine-tune.");
  cli.option("model", "NAME", "mlp or cnn (BENCHMARKS.md's models)", "mlp");
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
  const std::string model_name = cli.get("model");
  FRUGAL_CHECK(model_name == "mlp" || model_name == "cnn",
               "prune: --model must be mlp or cnn, got '" + model_name + "'");
  const std::int64_t infer_batch = cli.get_int("infer-batch");
  FRUGAL_CHECK(infer_batch >= 1, "prune: --infer-batch must be at least 1");
  FRUGAL_CHECK(finetune >= 0, "prune: --finetune-steps must be at least 0");
  const data::MnistDataset train_set = load_fashion(data::Split::Train);
  const data::MnistDataset test_set = load_fashion(data::Split::Test, cli.get_int("test"));
  const std::int64_t peak_batch = std::min(infer_batch, test_set.size());
  const Tensor x = test_set.images(0, peak_batch);

  manual_seed(0);
  auto trained = nn::make_model(model_name);
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
  Report report("prune", model_name + " after " + std::to_string(steps) + " SGD steps at batch " +
                             std::to_string(batch) + ", pruned, fine-tuned " +
                             std::to_string(finetune) + " steps; peak: one batch of " +
                             std::to_string(peak_batch));
  report.columns({"model", "hidden units/channels", "zero weights", "parameter bytes", "mask bytes",
                  "inference peak", "accuracy pruned", "accuracy fine-tuned"});
  bool zeros_kept = true;
  for (const Variant& v : variants) {
    auto model = copy_of(model_name, *trained);
    const std::int64_t before = allocated_now();
    std::int64_t mask_bytes = 0;
    if (v.structured) {
      prune_structured(*model, v.amount);
      model = prune::shrink_pruned_units(*model);
    } else if (v.amount > 0) {
      std::vector<std::pair<nn::Module*, std::string>> all;
      for (const auto& [name, child] : model->named_children())
        if (dynamic_cast<nn::Linear*>(child.get()) || dynamic_cast<nn::Conv2d*>(child.get()))
          all.emplace_back(child.get(), "weight");
      prune::global_unstructured(all, v.amount);
      mask_bytes = allocated_now() - before;  // the masks the gradient hooks hold
    }
    const double sparsity =
        static_cast<double>(zero_weights(*model)) / static_cast<double>(weight_count(*model));
    const std::vector<Tensor> pruned_positions = zero_positions(*model);
    const std::int64_t bytes = parameter_bytes(*model);
    const std::int64_t hidden = hidden_width(*model);
    model->eval();
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
      "structured: whole hidden units (weight rows) and channels (filters, with their batch "
      "norm entries) zeroed, then removed from the layers before and after them "
      "(shrink_pruned_units): smaller weights and activations");
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
