// frugal-bench-train: training and inference images/s of a benchmark model by the protocol of
// ../shared/BENCHMARKS.md — data in memory, 10 warm-up steps then 50 timed steps, median of
// 3 repeats — the same work bench/torch/train.py --bench times on PyTorch.
#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "allocator/default_allocators.h"
#include "bench/bench_timing.h"
#include "common/cli.h"
#include "common/json_writer.h"
#include "data/mnist.h"
#include "examples/train/step.h"
#include "kernels/cpu/parallel.h"
#include "nn/nn.h"

using namespace frugal;

namespace {

template <class F>
double median_rate(std::int64_t images_per_call, const F& fn, int warmup = 10, int timed = 50,
                   int repeats = 3) {
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    for (int i = 0; i < warmup; ++i) fn();
    const double t0 = bench::now_ns();
    for (int i = 0; i < timed; ++i) fn();
    rates.push_back(static_cast<double>(images_per_call * timed) / ((bench::now_ns() - t0) * 1e-9));
  }
  return bench::median(rates);
}

int run(int argc, char** argv) {
  CommandLine cli("frugal-bench-train",
                  "Training (batch 128) and inference (batch 512) images/s of a benchmark model,\n"
                  "10 warm-up and 50 timed steps, median of 3 repeats.");
  cli.option("model", "NAME", "cnn, mobilenet or mlp", "cnn");
  cli.option("threads", "N", "threads", "2");
  cli.option("batch-size", "N", "training batch", "128");
  cli.option("data", "DIR", "Fashion-MNIST idx files", data::kDefaultFashionMnistDir);
  cli.option("amp", "MODE", "mixed precision: off, bf16 or fp16 (autocast over forward and loss)",
             "off");
  cli.flag("json", "print the results as JSON");
  if (!cli.parse(argc, argv)) return 0;
  kernels::cpu::set_num_threads(static_cast<int>(cli.get_int("threads")));
  const std::int64_t batch = cli.get_int("batch-size");
  const train::AmpMode amp = train::parse_amp(cli.get("amp"));
  // float16 steps through a GradScaler, as frugal-train does; bf16 and float32 step plainly.
  amp::GradScaler scaler(amp::GradScalerOptions{.enabled = amp.needs_scaler()});
  const data::MnistDataset train = data::load_mnist(cli.get("data"), data::Split::Train);
  manual_seed(0);
  auto model = nn::make_model(cli.get("model"));
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const Tensor x = train.images(0, batch), y = train.labels.narrow(0, 0, batch).contiguous();
  const double train_rate = median_rate(batch, [&] {
    sgd.zero_grad();
    Tensor loss;
    {
      AutocastGuard autocast(kCPU, amp.dtype, amp.enabled());
      loss = cross_entropy(model->forward(x), y);
    }
    scaler.scale(loss).backward();
    scaler.step(sgd);
    scaler.update();
  });
  model->eval();
  const Tensor xi = train.images(0, 512);
  const double infer_rate = median_rate(512, [&] {
    InferenceMode guard;
    AutocastGuard autocast(kCPU, amp.dtype, amp.enabled());
    Tensor out = model->forward(xi);
  });
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto stats = alloc::cpu_allocator().stats();
  if (cli.has("json")) {
    JsonWriter j;
    j.field("model", cli.get("model"));
    j.field("amp", amp.name);
    j.field("train_images_per_sec", train_rate);
    j.field("inference_images_per_sec", infer_rate);
    j.field("peak_allocated_bytes", stats.allocated_bytes.all().peak);
    j.field("peak_rss_bytes", static_cast<std::int64_t>(usage.ru_maxrss) * 1024);
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("%s: training %.0f img/s, inference %.0f img/s\n", cli.get("model").c_str(),
                train_rate, infer_rate);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
