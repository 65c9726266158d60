// frugal-bench-batch-size: the batch-size finder against the truth. For each model, the
// finder's fit from two probe steps, its proposal for a budget, and real steps at other
// batches (predicted against measured peak allocated bytes); then the same under a capped
// allocator (the simulated device), with the step at batch + 1 showing the choice is the largest.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "allocator/default_allocators.h"
#include "common/cli.h"
#include "common/json_writer.h"
#include "common/progress.h"
#include "examples/train/step.h"
#include "kernels/cpu/parallel.h"
#include "nn/nn.h"

using namespace frugal;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::vector<std::int64_t> parse_list(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoll(item));
  return out;
}

nn::OptimizerFactory sgd_factory() {
  return [](const std::vector<Tensor>& p) {
    return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9));
  };
}

std::string steps_json(const nn::BatchSizeResult& r) {
  std::vector<std::string> out;
  for (const auto& s : r.steps) {
    JsonWriter j;
    j.field("role", s.role);
    j.field("batch", s.batch);
    j.field("peak_allocated_bytes", s.peak_allocated);
    j.field("out_of_memory", s.out_of_memory);
    j.field("fits", s.fits);
    out.push_back(j.str());
  }
  return JsonWriter::array(out);
}

int run(int argc, char** argv) {
  CommandLine cli(
      "frugal-bench-batch-size",
      "The batch-size finder on cnn and mobilenet: the fit from two probe steps, the\n"
      "proposal for a budget, predicted against measured peaks at other batches, and the\n"
      "choice under a capped allocator (the simulated device capacity).");
  cli.option("models", "NAMES", "models, comma-separated", "cnn,mobilenet");
  cli.option("budget-mib", "MIB", "budget in MiB above what is allocated before the search", "96");
  cli.option("check", "B,B,...", "batches to measure against the prediction", "24,48,64,96,128");
  cli.option("threads", "N", "threads", "2");
  cli.flag("json", "print the results as JSON");
  if (!cli.parse(argc, argv)) return 0;
  kernels::cpu::set_num_threads(static_cast<int>(cli.get_int("threads")));
  std::vector<std::string> models;
  {
    std::stringstream in(cli.get("models"));
    for (std::string m; std::getline(in, m, ',');) models.push_back(m);
  }
  const std::vector<std::int64_t> checks = parse_list(cli.get("check"));
  const auto budget_mib = cli.get_double("budget-mib");
  FRUGAL_CHECK(budget_mib > 0, "--budget-mib must be positive");

  std::string model_rows = "[";
  ProgressBar progress("models", models.size());
  std::size_t done = 0;
  for (const std::string& name : models) {
    manual_seed(0);
    auto model = nn::make_model(name);
    const auto budget = static_cast<std::int64_t>(
        static_cast<double>(alloc::cpu_allocator().stats().allocated_bytes.all().current) +
        budget_mib * kMiB);
    const nn::BatchSizeResult r = nn::find_batch_size(*model, sgd_factory(), {1, 28, 28}, budget);

    JsonWriter row;
    row.field("model", name);
    row.field("budget_bytes", r.budget);
    row.field("fixed_bytes", r.fixed_bytes);
    row.field("bytes_per_sample", r.bytes_per_sample);
    row.field("chosen_batch", r.batch);
    row.field("predicted_peak_bytes", r.predicted_peak);
    row.field("measured_peak_bytes", r.measured_peak);
    row.field("next_batch_failed", r.next_batch_failed);
    row.raw("steps", steps_json(r));
    if (!cli.has("json"))
      std::printf("%s, budget %.1f MiB: %s\n", name.c_str(), static_cast<double>(r.budget) / kMiB,
                  nn::describe(r).c_str());

    std::string check_rows = "[";
    double worst = 0;
    for (const std::int64_t b : checks) {
      const std::int64_t m = train::measure_step_peak(*model, b);
      const double err = static_cast<double>(r.predict(b) - m) / static_cast<double>(m);
      worst = std::max(worst, std::abs(err));
      JsonWriter c;
      c.field("batch", b);
      c.field("predicted_peak_bytes", r.predict(b));
      c.field("measured_peak_bytes", m);
      c.field("relative_error", err);
      if (check_rows.size() > 1) check_rows += ',';
      check_rows += c.str();
      if (!cli.has("json"))
        std::printf("  batch %4lld: predicted %8.2f MiB, measured %8.2f MiB (%+.2f%%)\n",
                    static_cast<long long>(b), static_cast<double>(r.predict(b)) / kMiB,
                    static_cast<double>(m) / kMiB, 100 * err);
    }
    row.raw("checks", check_rows + "]");
    row.field("worst_relative_error", worst);

    // The simulated device: the allocator capped at the same budget, the finder left to read
    // it (budget 0: the cap less 10% headroom), the chosen batch and the one above it run again.
    alloc::cpu_allocator().empty_cache();
    alloc::cpu_allocator().set_memory_limit(static_cast<std::size_t>(budget));
    try {
      const nn::BatchSizeResult capped = nn::find_batch_size(*model, sgd_factory(), {1, 28, 28}, 0);
      const std::int64_t at = train::measure_step_peak(*model, capped.batch);
      const std::int64_t above = train::measure_step_peak(*model, capped.batch + 1);
      alloc::cpu_allocator().set_memory_limit(0);
      JsonWriter c;
      c.field("capacity_bytes", budget);
      c.field("budget_bytes", capped.budget);
      c.field("chosen_batch", capped.batch);
      c.field("predicted_peak_bytes", capped.predicted_peak);
      c.field("measured_peak_bytes", capped.measured_peak);
      c.field("next_batch_failed_in_search", capped.next_batch_failed);
      c.field("rerun_peak_at_chosen_bytes", at);
      c.field("rerun_peak_at_next_bytes", above);
      c.raw("steps", steps_json(capped));
      row.raw("capped", c.str());
      if (!cli.has("json")) {
        std::printf("  capped at %.1f MiB: %s\n", static_cast<double>(budget) / kMiB,
                    nn::describe(capped).c_str());
        std::printf("  rerun: batch %lld peak %.2f MiB; batch %lld %s\n",
                    static_cast<long long>(capped.batch), static_cast<double>(at) / kMiB,
                    static_cast<long long>(capped.batch + 1),
                    above < 0
                        ? "out of memory"
                        : (std::to_string(static_cast<double>(above) / kMiB) + " MiB").c_str());
      }
    } catch (...) {
      alloc::cpu_allocator().set_memory_limit(0);
      throw;
    }
    if (model_rows.size() > 1) model_rows += ',';
    model_rows += row.str();
    progress.update(++done);
  }
  progress.finish();
  if (cli.has("json")) {
    JsonWriter j;
    j.field("threads", static_cast<std::int64_t>(cli.get_int("threads")));
    j.raw("models", model_rows + "]");
    std::printf("%s\n", j.str().c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
