// Shared pieces of frugal-memlab: report printing, counters, short training and evaluation.
#include "examples/memlab/lab.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "allocator/default_allocators.h"
#include "common/format.h"
#include "common/progress.h"
#include "kernels/cpu/parallel.h"

namespace frugal::memlab {

Report::Report(std::string subcommand, std::string title)
    : subcommand_(std::move(subcommand)), title_(std::move(title)) {}

void Report::row(std::vector<std::string> cells, const JsonWriter& json) {
  FRUGAL_CHECK(cells.size() == headers_.size(), "memlab report: a row of " +
                                                    std::to_string(cells.size()) + " cells under " +
                                                    std::to_string(headers_.size()) + " columns");
  cells_.push_back(std::move(cells));
  rows_json_.push_back(json.str());
}

void Report::print(bool json, double seconds) const {
  if (json) {
    JsonWriter out;
    out.field("subcommand", subcommand_);
    out.field("title", title_);
    out.field("seconds", seconds);
    std::vector<std::string> notes;
    for (const auto& n : notes_) notes.push_back(JsonWriter::quote(n));
    out.raw("rows", JsonWriter::array(rows_json_));
    out.raw("notes", JsonWriter::array(notes));
    out.raw("figures", figures_.str());
    std::printf("%s\n", out.str().c_str());
    return;
  }
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& r : cells_) width[c] = std::max(width[c], r[c].size());
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text = "|";
    for (std::size_t c = 0; c < cells.size(); ++c)
      text += " " + cells[c] + std::string(width[c] - cells[c].size(), ' ') + " |";
    std::printf("%s\n", text.c_str());
  };
  std::printf("\n%s: %s\n\n", subcommand_.c_str(), title_.c_str());
  line(headers_);
  std::string rule = "|";
  for (const std::size_t w : width) rule += std::string(w + 2, '-') + "|";
  std::printf("%s\n", rule.c_str());
  for (const auto& r : cells_) line(r);
  std::printf("\n");
  for (const auto& n : notes_) std::printf("- %s\n", n.c_str());
  std::printf("- took %.1f s\n", seconds);
}

void add_common_options(CommandLine& cli) {
  cli.option("threads", "N", "CPU threads", "2");
  cli.flag("json", "print the results as one JSON object instead of the table");
}

void apply_common_options(const CommandLine& cli) {
  const long long threads = cli.get_int("threads");
  FRUGAL_CHECK(threads >= 1, "--threads must be at least 1");
  kernels::cpu::set_num_threads(static_cast<int>(threads));
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::int64_t inference_peak(nn::Module& model, const Tensor& x) {
  InferenceMode inference;
  const std::int64_t before = allocated_now();
  reset_peak();
  { const Tensor logits = model.forward(x); }
  return allocated_peak() - before;
}

std::int64_t allocated_now() {
  return alloc::cpu_allocator().stats().allocated_bytes.all().current;
}
std::int64_t allocated_peak() { return alloc::cpu_allocator().stats().allocated_bytes.all().peak; }
std::int64_t reserved_now() { return alloc::cpu_allocator().stats().reserved_bytes.all().current; }
void reset_peak() { alloc::cpu_allocator().reset_peak_memory_stats(); }

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string bytes_text(std::int64_t bytes) { return format_bytes(bytes); }

std::string number_text(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string percent_text(double fraction) { return number_text(100.0 * fraction, 1) + "%"; }

data::MnistDataset load_fashion(data::Split split, std::int64_t limit) {
  data::MnistDataset set = data::load_mnist(data::kDefaultFashionMnistDir, split);
  if (limit > 0 && limit < set.size()) {
    set.pixels = set.pixels.narrow(0, 0, limit).contiguous();
    set.labels = set.labels.narrow(0, 0, limit).contiguous();
  }
  return set;
}

double evaluate(nn::Module& model, const data::MnistDataset& test, const train::AmpMode& amp) {
  model.eval();
  std::int64_t correct = 0;
  {
    InferenceMode no_graph;
    AutocastGuard autocast(kCPU, amp.dtype, amp.enabled());
    for (std::int64_t start = 0; start < test.size(); start += 500) {
      const std::int64_t n = std::min<std::int64_t>(500, test.size() - start);
      const Tensor logits = model.forward(test.images(start, n));
      correct += eq(argmax(logits, 1), test.labels.narrow(0, start, n)).sum().item<std::int64_t>();
    }
  }
  model.train();
  return static_cast<double>(correct) / static_cast<double>(test.size());
}

TrainResult train_and_evaluate(nn::Module& model, const data::MnistDataset& train,
                               const data::MnistDataset& test, std::int64_t steps,
                               std::int64_t batch, const train::AmpMode& amp) {
  FRUGAL_CHECK(steps >= 1 && batch >= 1 && batch <= train.size(),
               "training: steps must be >= 1 and the batch between 1 and the training set's size");
  optim::SGD sgd(model.parameters(), optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions{.enabled = amp.needs_scaler()});
  TrainResult r;
  r.steps = steps;
  std::vector<double> losses;
  ProgressBar bar("train", static_cast<std::uint64_t>(steps));
  double t0 = seconds_now();
  for (std::int64_t s = 0; s < steps; ++s) {
    if (s == 1) t0 = seconds_now();  // the first step (caches carved, pages touched) is not timed
    const std::int64_t start = (s * batch) % (train.size() - batch + 1);
    const train::StepResult step =
        train::train_step(model, sgd, scaler, amp, train.images(start, batch),
                          train.labels.narrow(0, start, batch), 1);
    losses.push_back(step.loss_sum / static_cast<double>(batch));
    bar.update(static_cast<std::uint64_t>(s + 1));
  }
  r.seconds_per_step =
      (seconds_now() - t0) / static_cast<double>(std::max<std::int64_t>(1, steps - 1));
  bar.finish();
  const std::size_t tail = std::min<std::size_t>(20, losses.size());
  for (std::size_t i = losses.size() - tail; i < losses.size(); ++i)
    r.last_loss += losses[i] / static_cast<double>(tail);
  r.test_accuracy = evaluate(model, test, amp);
  return r;
}

}  // namespace frugal::memlab
