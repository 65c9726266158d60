// Shared pieces of frugal-memlab's subcommands: the options every one takes, the CPU
// allocator's exact counters, a short Fashion-MNIST training run, and the table/JSON report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/json_writer.h"
#include "data/mnist.h"
#include "examples/train/step.h"
#include "nn/nn.h"

namespace frugal::memlab {

// A subcommand's result: a table (text cells, and the same rows as JSON objects), notes under
// it, and the key figures as top-level JSON fields.
class Report {
 public:
  Report(std::string subcommand, std::string title);
  void columns(std::vector<std::string> headers) { headers_ = std::move(headers); }
  void row(std::vector<std::string> cells, const JsonWriter& json);
  void note(const std::string& text) { notes_.push_back(text); }
  JsonWriter& figures() { return figures_; }
  // The table (or, with json, one JSON object) on stdout, with the seconds the subcommand took.
  void print(bool json, double seconds) const;

 private:
  std::string subcommand_, title_;
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> cells_;
  std::vector<std::string> rows_json_, notes_;
  JsonWriter figures_;
};

// --json and --threads, which every subcommand takes.
void add_common_options(CommandLine& cli);
void apply_common_options(const CommandLine& cli);

// The CPU allocator's counters (bytes): exact, and independent of the machine's load.
std::int64_t allocated_now();
std::int64_t allocated_peak();
std::int64_t reserved_now();
void reset_peak();
double seconds_now();                       // a monotonic clock
double median(std::vector<double> values);  // the upper median of a non-empty list
// Allocated bytes at the peak of one inference pass over `x` (no autograd), above what was
// allocated before it (the model and the batch): activations, outputs and any temporaries.
std::int64_t inference_peak(nn::Module& model, const Tensor& x);

std::string bytes_text(std::int64_t bytes);  // format_bytes
std::string number_text(double value, int decimals);
std::string percent_text(double fraction);  // 0.123 -> "12.3%"

// Fashion-MNIST from Debian's dataset-fashion-mnist (a frugal::Error naming the folder when
// it is missing); the first `limit` samples when limit > 0.
data::MnistDataset load_fashion(data::Split split, std::int64_t limit = 0);

struct TrainResult {
  std::int64_t steps = 0;
  double seconds_per_step = 0;  // over the steps after the first (or the first alone)
  double last_loss = 0;         // mean loss of the last 20 steps
  double test_accuracy = 0;     // on `test`, in eval mode
};
// `steps` SGD (momentum 0.9, lr 0.05) steps of frugal-train's train_step at `batch` over the
// training set in order, then accuracy on `test` (under the same autocast).
TrainResult train_and_evaluate(nn::Module& model, const data::MnistDataset& train,
                               const data::MnistDataset& test, std::int64_t steps,
                               std::int64_t batch, const train::AmpMode& amp = {});
double evaluate(nn::Module& model, const data::MnistDataset& test, const train::AmpMode& amp = {});

}  // namespace frugal::memlab
