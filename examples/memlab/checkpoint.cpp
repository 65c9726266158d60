// frugal-memlab checkpoint: activation checkpointing on a deep network. checkpoint_sequential
// keeps only each segment's input during forward and recomputes the segment in backward:
// peak memory falls towards (segments + one segment's activations), time rises by about one
// more forward. The gradients must be bit for bit those of the plain step.
#include <time.h>

#include <algorithm>
#include <cstring>

#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {
namespace {

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::string signed_percent(double fraction) {
  std::string text = percent_text(fraction);
  if (fraction >= 0) text.insert(text.begin(), '+');
  return text;
}

}  // namespace

int checkpoint_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "A training step (forward, cross-entropy, backward, SGD) of a deep conv net, plain and with\n"
      "checkpoint_sequential: peak allocated bytes, time per step (plain and checkpointed steps\n"
      "alternated, median), and the gradients compared bit for bit at one parameter and RNG "
      "state.");
  cli.option("blocks", "N", "conv 3x3 + BN-ReLU blocks", "20");
  cli.option("channels", "C", "channels of each block", "16");
  cli.option("size", "S", "input height and width", "32");
  cli.option("batch-size", "N", "images", "16");
  cli.option("segments", "K", "checkpointed segments", "4");
  cli.option("repeats", "N", "alternating timed steps per configuration", "9");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const int blocks = static_cast<int>(cli.get_int("blocks")),
            segments = static_cast<int>(cli.get_int("segments"));
  const std::int64_t channels = cli.get_int("channels"), size = cli.get_int("size"),
                     batch = cli.get_int("batch-size");
  const int repeats = static_cast<int>(cli.get_int("repeats"));
  FRUGAL_CHECK(
      blocks >= 1 && channels >= 1 && size >= 1 && batch >= 1 && segments >= 1 && repeats >= 1,
      "--blocks, --channels, --size, --batch-size, --segments and --repeats must be >= 1");

  manual_seed(0);
  auto model = nn::deep_convnet(blocks, channels);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  const Tensor x = randn({batch, 3, size, size});
  const Tensor y = randint(0, 10, {batch});
  const auto forward = [&](int k) {
    return k == 0 ? model->forward(x) : nn::checkpoint_sequential(*model, k, x);
  };
  const auto step = [&](int k) {
    Tensor loss = cross_entropy(forward(k), y);
    sgd.zero_grad();
    loss.backward();
    sgd.step();
  };
  const auto grads_of = [&](int k) {
    sgd.zero_grad();
    default_generator().set_state(1, 0);
    cross_entropy(forward(k), y).backward();
    std::vector<Tensor> g;
    for (const Tensor& p : model->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  const std::vector<Tensor> plain_grads = grads_of(0), ckpt_grads = grads_of(segments);
  bool identical = true;
  for (std::size_t i = 0; i < plain_grads.size(); ++i)
    identical = identical && std::memcmp(plain_grads[i].data_ptr(), ckpt_grads[i].data_ptr(),
                                         plain_grads[i].nbytes()) == 0;

  // Peak of a steady-state step each (gradients and momentum live), then alternating timing.
  std::int64_t peak[2] = {0, 0};
  const int config[2] = {0, segments};
  for (int c = 0; c < 2; ++c) {
    step(config[c]);
    reset_peak();
    step(config[c]);
    peak[c] = allocated_peak();
  }
  // Each repeat: per configuration one untimed step (the cache carved for it) and one timed;
  // the ratio to the plain step of the same repeat, median over repeats. Process CPU time
  // (this process's threads only) is disturbed less than wall time by a loaded machine.
  std::vector<double> ms[2], cpu_ms[2], wall_ratio, cpu_ratio;
  for (int r = 0; r < repeats; ++r) {
    for (int c = 0; c < 2; ++c) {
      step(config[c]);
      const double start = seconds_now(), cpu_start = process_cpu_seconds();
      step(config[c]);
      ms[c].push_back(1e3 * (seconds_now() - start));
      cpu_ms[c].push_back(1e3 * (process_cpu_seconds() - cpu_start));
    }
    wall_ratio.push_back(ms[1].back() / ms[0].back());
    cpu_ratio.push_back(cpu_ms[1].back() / cpu_ms[0].back());
  }
  const double plain_ms = median(ms[0]), ckpt_ms = median(ms[1]);
  const double plain_cpu = median(cpu_ms[0]), ckpt_cpu = median(cpu_ms[1]);
  const double saving = 1.0 - static_cast<double>(peak[1]) / static_cast<double>(peak[0]);
  const double overhead = median(wall_ratio) - 1.0, cpu_overhead = median(cpu_ratio) - 1.0;

  Report report("checkpoint", std::to_string(blocks) + " conv blocks x " +
                                  std::to_string(channels) + " channels, " + std::to_string(batch) +
                                  " x 3x" + std::to_string(size) + "x" + std::to_string(size) +
                                  ", one training step");
  report.columns({"step", "peak allocated", "vs plain", "wall ms/step", "CPU ms/step",
                  "time vs plain (wall, CPU)", "gradients"});
  for (int c = 0; c < 2; ++c) {
    const std::string name =
        c == 0 ? "plain" : "checkpoint_sequential, " + std::to_string(segments) + " segments";
    JsonWriter j;
    j.field("step", name);
    j.field("peak_allocated_bytes", peak[c]);
    j.field("ms_per_step", c == 0 ? plain_ms : ckpt_ms);
    j.field("cpu_ms_per_step", c == 0 ? plain_cpu : ckpt_cpu);
    report.row(
        {name, bytes_text(peak[c]),
         number_text(static_cast<double>(peak[c]) / static_cast<double>(peak[0]), 3) + "x",
         number_text(c == 0 ? plain_ms : ckpt_ms, 1), number_text(c == 0 ? plain_cpu : ckpt_cpu, 1),
         c == 0 ? "1.000x, 1.000x"
                : number_text(1 + overhead, 3) + "x, " + number_text(1 + cpu_overhead, 3) + "x",
         c == 0 ? "reference" : (identical ? "identical (bit for bit)" : "DIFFERENT")},
        j);
  }
  report.note("peak down " + percent_text(saving) + " (target >= 40%: " +
              (saving >= 0.4 ? "met" : "MISSED") + "); time " + signed_percent(overhead) +
              " wall, " + signed_percent(cpu_overhead) + " process CPU (target <= +40%: " +
              (std::max(overhead, cpu_overhead) <= 0.4 ? "met" : "MISSED") +
              "); median of the per-repeat ratios over " + std::to_string(repeats) +
              " alternating repeats");
  report.note(
      "wall time is disturbed by the other processes of a shared machine; process CPU time much "
      "less");
  JsonWriter& f = report.figures();
  f.field("plain_peak_bytes", peak[0]);
  f.field("checkpoint_peak_bytes", peak[1]);
  f.field("peak_saving", saving);
  f.field("plain_ms", plain_ms);
  f.field("checkpoint_ms", ckpt_ms);
  f.field("plain_cpu_ms", plain_cpu);
  f.field("checkpoint_cpu_ms", ckpt_cpu);
  f.field("time_overhead", overhead);
  f.field("cpu_time_overhead", cpu_overhead);
  f.field("gradients_identical", identical);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
