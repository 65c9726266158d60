// frugal-bench-checkpoint: what activation checkpointing saves and costs on a deep network
// (20 conv 3x3 + BN-ReLU blocks): peak allocated bytes and time of a training step, plain and
// checkpointed at several segment counts, timed alternately (A B C ... A B C ...).
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "allocator/default_allocators.h"
#include "bench/bench_timing.h"
#include "common/cli.h"
#include "common/json_writer.h"
#include "common/progress.h"
#include "kernels/cpu/parallel.h"
#include "nn/nn.h"

using namespace frugal;

namespace {

double process_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const int k = std::stoi(item);
    FRUGAL_CHECK(k >= 1, "--segments: each count must be >= 1, got " + item);
    out.push_back(k);
  }
  FRUGAL_CHECK(!out.empty(), "--segments: give at least one count");
  return out;
}

struct Config {
  explicit Config(int k) : segments(k) {}
  int segments;  // 0: plain
  std::int64_t peak = 0;
  // Per repeat: wall and process CPU time of a step, and their ratios to the plain step of the
  // same repeat. CPU time counts the work of this process's threads only, so it is less
  // disturbed by other processes on a shared machine than wall time.
  std::vector<double> step_ms, ratio, cpu_ms, cpu_ratio;
  std::int64_t device_allocs = 0;  // segments the allocator had to get during timed steps
  bool identical = true;
  double max_abs_diff = 0;
};

int run(int argc, char** argv) {
  CommandLine cli(
      "frugal-bench-checkpoint",
      "Peak allocated bytes and time of a training step (forward, cross-entropy,\n"
      "backward, SGD step) of a deep conv net, plain and with checkpoint_sequential,\n"
      "configurations timed alternately, medians over repeats; gradients compared bit by bit.");
  cli.option("model", "NAME",
             "deep (the conv net of --blocks blocks), cnn or mobilenet (1x28x28 inputs)", "deep");
  cli.option("blocks", "N", "conv 3x3 + BN-ReLU blocks", "20");
  cli.option("channels", "C", "channels of each block", "16");
  cli.option("size", "S", "input height and width", "32");
  cli.option("batch-size", "N", "batch", "8");
  cli.option("segments", "K,K,...", "segment counts to compare with the plain step", "2,4,6");
  cli.option("steps", "N", "timed steps per configuration per repeat", "4");
  cli.option("repeats", "N", "alternating repeats", "5");
  cli.option("threads", "N", "threads", "2");
  cli.flag("json", "print the results as JSON");
  if (!cli.parse(argc, argv)) return 0;
  kernels::cpu::set_num_threads(static_cast<int>(cli.get_int("threads")));
  const int blocks = static_cast<int>(cli.get_int("blocks"));
  const std::int64_t channels = cli.get_int("channels"), size = cli.get_int("size"),
                     batch = cli.get_int("batch-size");
  const int steps = static_cast<int>(cli.get_int("steps")),
            repeats = static_cast<int>(cli.get_int("repeats"));
  FRUGAL_CHECK(
      blocks >= 1 && channels >= 1 && size >= 1 && batch >= 1 && steps >= 1 && repeats >= 1,
      "blocks, channels, size, batch-size, steps and repeats must be >= 1");

  manual_seed(0);
  const std::string model_name = cli.get("model");
  const bool deep = model_name == "deep";
  auto model = deep ? nn::deep_convnet(blocks, channels) : nn::make_model(model_name);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  const Tensor x = deep ? randn({batch, 3, size, size}) : randn({batch, 1, 28, 28});
  const Tensor y = randint(0, 10, {batch});
  std::vector<Config> configs{Config(0)};
  for (const int k : parse_list(cli.get("segments"))) configs.emplace_back(k);
  const auto forward = [&](int segments) {
    return segments == 0 ? model->forward(x) : nn::checkpoint_sequential(*model, segments, x);
  };
  const auto step = [&](int segments) {
    Tensor loss = cross_entropy(forward(segments), y);
    sgd.zero_grad();
    loss.backward();
    sgd.step();
  };

  // Gradients at one parameter state and one RNG state, plain against each segment count.
  {
    const auto grads_of = [&](int segments) {
      sgd.zero_grad();
      default_generator().set_state(1, 0);
      cross_entropy(forward(segments), y).backward();
      std::vector<Tensor> g;
      for (const Tensor& p : model->parameters()) g.push_back(p.grad().clone());
      return g;
    };
    const std::vector<Tensor> plain = grads_of(0);
    for (Config& c : configs) {
      const std::vector<Tensor> g = grads_of(c.segments);
      for (std::size_t i = 0; i < g.size(); ++i) {
        c.identical =
            c.identical && std::memcmp(g[i].data_ptr(), plain[i].data_ptr(), g[i].nbytes()) == 0;
        c.max_abs_diff = std::max(c.max_abs_diff,
                                  static_cast<double>(max((g[i] - plain[i]).abs()).item<float>()));
      }
    }
    sgd.zero_grad();
  }

  // Peak of one steady-state step each (weights, gradients and momentum live, as in training).
  step(0);
  for (Config& c : configs) {
    step(c.segments);
    alloc::cpu_allocator().reset_peak_memory_stats();
    step(c.segments);
    c.peak = alloc::cpu_allocator().stats().allocated_bytes.all().peak;
  }

  ProgressBar progress("timing", static_cast<std::uint64_t>(repeats));
  for (int r = 0; r < repeats; ++r) {
    for (Config& c : configs) {
      step(c.segments);  // warm: the cache is carved for this configuration
      const std::int64_t a0 = alloc::cpu_allocator().stats().num_device_alloc;
      const double t0 = bench::now_ns(), c0 = process_cpu_ns();
      for (int i = 0; i < steps; ++i) step(c.segments);
      c.device_allocs += alloc::cpu_allocator().stats().num_device_alloc - a0;
      c.step_ms.push_back((bench::now_ns() - t0) * 1e-6 / steps);
      c.cpu_ms.push_back((process_cpu_ns() - c0) * 1e-6 / steps);
    }
    for (Config& c : configs) {
      c.ratio.push_back(c.step_ms.back() / configs[0].step_ms.back());
      c.cpu_ratio.push_back(c.cpu_ms.back() / configs[0].cpu_ms.back());
    }
    progress.update(static_cast<std::uint64_t>(r + 1));
  }
  progress.finish();

  const double plain_peak = static_cast<double>(configs[0].peak);
  if (cli.has("json")) {
    JsonWriter j;
    j.field("model", model_name);
    j.field("blocks", static_cast<std::int64_t>(blocks));
    j.field("channels", channels);
    j.field("size", size);
    j.field("batch_size", batch);
    j.field("threads", static_cast<std::int64_t>(cli.get_int("threads")));
    std::string rows = "[";
    for (const Config& c : configs) {
      JsonWriter row;
      row.field("segments", static_cast<std::int64_t>(c.segments));
      row.field("peak_allocated_bytes", c.peak);
      row.field("peak_reduction", 1.0 - static_cast<double>(c.peak) / plain_peak);
      row.field("step_ms_median", bench::median(c.step_ms));
      row.field("time_ratio_median", bench::median(c.ratio));
      row.field("cpu_ms_median", bench::median(c.cpu_ms));
      row.field("cpu_time_ratio_median", bench::median(c.cpu_ratio));
      row.field("device_allocs_in_timed_steps", c.device_allocs);
      row.field("gradients_bit_identical", c.identical);
      row.field("max_abs_gradient_difference", c.max_abs_diff);
      if (rows.size() > 1) rows += ',';
      rows += row.str();
    }
    j.raw("configurations", rows + "]");
    std::printf("%s\n", j.str().c_str());
  } else {
    if (deep)
      std::printf("deep conv net: %d blocks of %lld channels, input %lldx3x%lldx%lld, %d threads\n",
                  blocks, static_cast<long long>(channels), static_cast<long long>(batch),
                  static_cast<long long>(size), static_cast<long long>(size),
                  static_cast<int>(cli.get_int("threads")));
    else
      std::printf("%s, input %lldx1x28x28, %d threads\n", model_name.c_str(),
                  static_cast<long long>(batch), static_cast<int>(cli.get_int("threads")));
    std::printf("%-9s %14s %9s %9s %11s %9s %10s  %s\n", "segments", "peak alloc", "vs plain",
                "step ms", "time ratio", "cpu ms", "cpu ratio", "gradients");
    for (const Config& c : configs) {
      char gradients[64];
      if (c.identical)
        std::snprintf(gradients, sizeof gradients, "bit-identical");
      else
        std::snprintf(gradients, sizeof gradients, "max diff %.3g", c.max_abs_diff);
      char name[16];
      std::snprintf(name, sizeof name, c.segments == 0 ? "plain" : "%d", c.segments);
      std::printf("%-9s %10.2f MiB %8.1f%% %9.1f %10.3fx %9.1f %9.3fx  %s\n", name,
                  static_cast<double>(c.peak) / (1 << 20),
                  -100.0 * (1.0 - static_cast<double>(c.peak) / plain_peak),
                  bench::median(c.step_ms), bench::median(c.ratio), bench::median(c.cpu_ms),
                  bench::median(c.cpu_ratio), gradients);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
