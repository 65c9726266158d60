// frugal-memlab batch-size: the peak memory of a training step grows linearly with the batch;
// nn::find_batch_size fits that line from two probe steps. The table puts its prediction
// beside the measured peak at several batches, then lets it choose under a capped allocator.
#include <cmath>
#include <sstream>

#include "allocator/default_allocators.h"
#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {
namespace {

nn::OptimizerFactory sgd_factory() {
  return [](const std::vector<Tensor>& p) {
    return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9));
  };
}

std::vector<std::int64_t> parse_batches(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const long long b = std::atoll(item.c_str());
    FRUGAL_CHECK(b >= 1, "--batches: each batch must be a number >= 1, got '" + item + "'");
    out.push_back(b);
  }
  FRUGAL_CHECK(!out.empty(), "--batches: give at least one batch");
  return out;
}

}  // namespace

int batch_size_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "Peak allocated bytes of a training step (SGD, momentum) at several batches, against\n"
      "nn::find_batch_size's prediction from its two probes; then the finder under an allocator\n"
      "capped at --capacity-mib above what is in use (the simulated device), its chosen batch\n"
      "and the batch above it run for real.");
  cli.option("model", "NAME", "cnn, mobilenet or mlp", "cnn");
  cli.option("batches", "B,B,...", "batches to measure", "16,32,64,128");
  cli.option("capacity-mib", "MIB", "simulated device capacity above the memory already in use",
             "40");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::vector<std::int64_t> batches = parse_batches(cli.get("batches"));
  const double capacity_mib = cli.get_double("capacity-mib");
  FRUGAL_CHECK(capacity_mib > 0, "--capacity-mib must be positive");

  manual_seed(0);
  auto model = nn::make_model(cli.get("model"));
  const std::int64_t in_use = allocated_now();
  // The fit, from the probes (16 and 32) under a budget the probes fit in.
  const auto capacity =
      static_cast<std::int64_t>(static_cast<double>(in_use) + capacity_mib * 1024 * 1024);
  const nn::BatchSizeResult fit = nn::find_batch_size(*model, sgd_factory(), {1, 28, 28}, capacity);

  Report report("batch-size", cli.get("model") +
                                  ": peak allocated of one training step vs batch, "
                                  "finder's prediction (a + b x batch) vs measured");
  report.columns({"batch", "measured peak", "predicted peak", "error", "within 5%"});
  double worst = 0;
  for (const std::int64_t b : batches) {
    const std::int64_t m = train::measure_step_peak(*model, b);
    FRUGAL_CHECK(m > 0,
                 "batch-size: the step at batch " + std::to_string(b) + " ran out of memory");
    const std::int64_t p = fit.predict(b);
    const double err = static_cast<double>(p - m) / static_cast<double>(m);
    worst = std::max(worst, std::abs(err));
    JsonWriter j;
    j.field("batch", b);
    j.field("measured_peak_bytes", m);
    j.field("predicted_peak_bytes", p);
    j.field("relative_error", err);
    report.row({std::to_string(b), bytes_text(m), bytes_text(p), number_text(100 * err, 2) + "%",
                std::abs(err) <= 0.05 ? "yes" : "NO"},
               j);
  }

  // The simulated device: the allocator capped, the finder left to read the cap (budget 0:
  // the cap less its 10% headroom), the chosen batch and the next one run again under the cap.
  alloc::cpu_allocator().empty_cache();
  alloc::cpu_allocator().set_memory_limit(static_cast<std::size_t>(capacity));
  nn::BatchSizeResult capped;
  std::int64_t at = 0, above = 0;
  try {
    capped = nn::find_batch_size(*model, sgd_factory(), {1, 28, 28}, 0);
    at = train::measure_step_peak(*model, capped.batch);
    above = train::measure_step_peak(*model, capped.batch + 1);
  } catch (...) {
    alloc::cpu_allocator().set_memory_limit(0);
    throw;
  }
  alloc::cpu_allocator().set_memory_limit(0);
  const bool largest = above < 0 || above > capped.budget;
  const double chosen_err = static_cast<double>(capped.predicted_peak - capped.measured_peak) /
                            static_cast<double>(capped.measured_peak);
  for (const auto& [label, b, peak] :
       {std::tuple<const char*, std::int64_t, std::int64_t>{"chosen", capped.batch, at},
        {"chosen + 1", capped.batch + 1, above}}) {
    JsonWriter j;
    j.field("batch", b);
    j.field("role", label);
    j.field("measured_peak_bytes", peak);
    j.field("predicted_peak_bytes", capped.predict(b));
    j.field("fits_budget", peak >= 0 && peak <= capped.budget);
    const double err =
        peak > 0 ? static_cast<double>(capped.predict(b) - peak) / static_cast<double>(peak) : 0.0;
    report.row(
        {std::to_string(b) + " (" + label + ")", peak < 0 ? "out of memory" : bytes_text(peak),
         bytes_text(capped.predict(b)), peak < 0 ? "-" : number_text(100 * err, 2) + "%",
         peak >= 0 && peak <= capped.budget ? "fits" : "does not fit"},
        j);
  }
  report.note("fit from probes at 16 and 32: peak = " +
              bytes_text(static_cast<std::int64_t>(fit.fixed_bytes)) + " + " +
              bytes_text(static_cast<std::int64_t>(fit.bytes_per_sample)) +
              " x batch; worst error over the measured "
              "batches " +
              percent_text(worst));
  report.note("simulated device: allocator capped at " + bytes_text(capacity) + " (" +
              number_text(capacity_mib, 0) + " MiB above the " + bytes_text(in_use) +
              " in use); finder budget " + bytes_text(capped.budget) +
              " (cap less 10% headroom); chose batch " + std::to_string(capped.batch) +
              ", predicted " + bytes_text(capped.predicted_peak) + ", measured " +
              bytes_text(capped.measured_peak) + " (" + percent_text(chosen_err) + "); batch + 1 " +
              (largest ? "does not fit: the choice is the largest" : "FITS"));
  report.note(
      "each step: SGD with momentum after a warm-up at batch 1, from an empty cache, random "
      "1x28x28 inputs");
  JsonWriter& f = report.figures();
  f.field("model", cli.get("model"));
  f.field("fixed_bytes", fit.fixed_bytes);
  f.field("bytes_per_sample", fit.bytes_per_sample);
  f.field("worst_relative_error", worst);
  f.field("capacity_bytes", capacity);
  f.field("budget_bytes", capped.budget);
  f.field("chosen_batch", capped.batch);
  f.field("chosen_predicted_peak_bytes", capped.predicted_peak);
  f.field("chosen_measured_peak_bytes", capped.measured_peak);
  f.field("chosen_relative_error", chosen_err);
  f.field("next_batch_peak_bytes", above);
  f.field("chosen_is_largest", largest);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
