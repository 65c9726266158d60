// frugal-memlab leak: a classic leak and the leak watch that catches it. Both loops train an
// mlp and score each batch for a running accuracy; the leaking one scores with autograd on
// and keeps the score tensors in a list, so each keeps its forward's saved activations alive
// (the graph is never run backward); the correct one scores under NoGradGuard and keeps a
// number. monitor::LeakWatch sees one memory sample per (short) epoch.
#include "allocator/default_allocators.h"
#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"
#include "monitor/history_tags.h"
#include "monitor/leak_watch.h"

namespace frugal::memlab {
namespace {

struct LoopResult {
  std::int64_t epochs = 0;
  std::int64_t first_warning_epoch = -1;  // -1: never warned
  std::string first_warning;
  std::int64_t warnings = 0;
  std::int64_t allocated_start = 0, allocated_end = 0, rss_start = 0, rss_end = 0;
};

LoopResult run_loop(bool leaking, std::int64_t epochs, std::int64_t steps, std::int64_t batch,
                    bool stop_at_warning) {
  auto& allocator = alloc::cpu_allocator();
  manual_seed(0);
  auto model = nn::make_model("mlp");
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const Tensor images = randn({steps * batch, 1, 28, 28});
  const Tensor labels = randint(0, 10, {steps * batch});
  std::vector<Tensor> kept_scores;  // the leak: tensors that still require grad
  double score_sum = 0;             // the correct way: numbers
  monitor::LeakWatch watch({},
                           monitor::history_tag_provider(allocator, monitor::TagGrouping::kModule));
  LoopResult r;
  const monitor::MemorySample baseline = monitor::sample_memory(0, allocator);
  watch.observe(baseline);
  r.allocated_start = baseline.allocated;
  r.rss_start = baseline.rss;
  for (std::int64_t e = 1; e <= epochs; ++e) {
    for (std::int64_t s = 0; s < steps; ++s) {
      const Tensor x = images.narrow(0, s * batch, batch), y = labels.narrow(0, s * batch, batch);
      Tensor loss = cross_entropy(model->forward(x), y);
      sgd.zero_grad();
      loss.backward();
      sgd.step();
      if (leaking) {
        kept_scores.push_back(cross_entropy(model->forward(x), y));  // graph and activations kept
      } else {
        NoGradGuard no_grad;
        score_sum += cross_entropy(model->forward(x), y).item<float>();
      }
    }
    const monitor::MemorySample sample = monitor::sample_memory(e, allocator);
    const auto warnings = watch.observe(sample);
    r.epochs = e;
    r.allocated_end = sample.allocated;
    r.rss_end = sample.rss;
    r.warnings += static_cast<std::int64_t>(warnings.size());
    if (!warnings.empty() && r.first_warning_epoch < 0) {
      r.first_warning_epoch = e;
      r.first_warning = warnings.front().message();
    }
    if (stop_at_warning && r.first_warning_epoch >= 0) break;
  }
  return r;
}

}  // namespace

int leak_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "An mlp trained on random batches, scoring each batch: once keeping the scores as tensors\n"
      "with their graphs (a leak), once under NoGradGuard keeping numbers. monitor::LeakWatch\n"
      "(3 growing epochs, over 1 MiB and 1% each) samples allocated, reserved and RSS per epoch.");
  cli.option("steps", "N", "steps per epoch", "20");
  cli.option("batch-size", "N", "images per step", "32");
  cli.option("leak-epochs", "N",
             "epochs of the leaking loop at most (it stops at the first warning)", "6");
  cli.option("epochs", "N", "epochs of the correct loop", "20");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::int64_t steps = cli.get_int("steps"), batch = cli.get_int("batch-size");
  FRUGAL_CHECK(
      steps >= 1 && batch >= 1 && cli.get_int("leak-epochs") >= 1 && cli.get_int("epochs") >= 1,
      "--steps, --batch-size, --leak-epochs and --epochs must be >= 1");
  // The history attributes live bytes to modules, so a warning can name what grows.
  alloc::cpu_allocator().record_history(std::size_t{1} << 16);
  const LoopResult leak = run_loop(true, cli.get_int("leak-epochs"), steps, batch, true);
  const LoopResult correct = run_loop(false, cli.get_int("epochs"), steps, batch, false);
  alloc::cpu_allocator().record_history(0);

  Report report("leak", "mlp, " + std::to_string(steps) + " steps of " + std::to_string(batch) +
                            " per epoch, leak watch sampled once per epoch");
  report.columns({"loop", "epochs run", "allocated start -> end", "RSS start -> end",
                  "first warning at epoch", "warnings", "verdict"});
  const bool caught = leak.first_warning_epoch >= 1 && leak.first_warning_epoch <= 3;
  const bool quiet = correct.warnings == 0;
  for (const auto& [name, r, ok] : {std::tuple<const char*, const LoopResult&, bool>{
                                        "leaking (keeps score tensors)", leak, caught},
                                    {"correct (NoGradGuard, .item())", correct, quiet}}) {
    JsonWriter j;
    j.field("loop", name);
    j.field("epochs", r.epochs);
    j.field("allocated_start_bytes", r.allocated_start);
    j.field("allocated_end_bytes", r.allocated_end);
    j.field("rss_start_bytes", r.rss_start);
    j.field("rss_end_bytes", r.rss_end);
    j.field("first_warning_epoch", r.first_warning_epoch);
    j.field("warnings", r.warnings);
    j.field("as_expected", ok);
    report.row({name, std::to_string(r.epochs),
                bytes_text(r.allocated_start) + " -> " + bytes_text(r.allocated_end),
                bytes_text(r.rss_start) + " -> " + bytes_text(r.rss_end),
                r.first_warning_epoch < 0 ? "none" : std::to_string(r.first_warning_epoch),
                std::to_string(r.warnings),
                ok ? (&r == &leak ? "caught within 3 epochs" : "quiet") : "WRONG"},
               j);
  }
  if (!leak.first_warning.empty()) report.note("the warning: " + leak.first_warning);
  report.note("epoch 0 is a baseline sample taken before the first epoch");
  JsonWriter& f = report.figures();
  f.field("leak_first_warning_epoch", leak.first_warning_epoch);
  f.field("leak_caught_within_3_epochs", caught);
  f.field("leak_warning", leak.first_warning);
  f.field("correct_epochs", correct.epochs);
  f.field("correct_warnings", correct.warnings);
  f.field("correct_quiet", quiet);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
