// frugal-ddp-train: data-parallel training of a model on Fashion-MNIST over MPI, run as
// `mpirun -np 2 frugal-ddp-train`: each rank trains on global batch / world size images of a
// DistributedSampler's share, DistributedDataParallel averages the gradients, and every rank
// reports its own peak allocated memory (what data parallelism divides), the loss, and the
// test accuracy evaluated a slice per rank.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "allocator/default_allocators.h"
#include "common/cli.h"
#include "common/error.h"
#include "common/format.h"
#include "common/json_writer.h"
#include "common/progress.h"
#include "data/distributed_sampler.h"
#include "data/mnist.h"
#include "distributed/data_parallel.h"
#include "kernels/cpu/cpu_isa.h"
#include "nn/nn.h"

using namespace frugal;

namespace {

// The rows `indices[0..count)` of a contiguous tensor, copied into a fresh tensor.
Tensor gather_rows(const Tensor& src, const std::int64_t* indices, std::int64_t count) {
  std::vector<std::int64_t> sizes(src.sizes().begin(), src.sizes().end());
  sizes[0] = count;
  Tensor out = empty(sizes, src.options());
  const std::size_t row = src.nbytes() / static_cast<std::size_t>(src.size(0));
  auto* dst = static_cast<char*>(out.data_ptr());
  const auto* from = static_cast<const char*>(src.data_ptr());
  for (std::int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * row, from + static_cast<std::size_t>(indices[i]) * row, row);
  return out;
}

// Test-set accuracy, each rank on its contiguous slice of the test set (no padding, so no
// image counts twice), the correct counts summed over the ranks.
double evaluate(nn::Module& model, const data::MnistDataset& test,
                distributed::ProcessGroup& group) {
  model.eval();
  InferenceMode no_graph;
  const std::int64_t n = test.size(), begin = n * group.rank() / group.size(),
                     end = n * (group.rank() + 1) / group.size();
  double correct = 0;
  for (std::int64_t start = begin; start < end; start += 500) {
    const std::int64_t count = std::min<std::int64_t>(500, end - start);
    const Tensor logits = model.forward(test.images(start, count));
    correct += static_cast<double>(
        eq(argmax(logits, 1), test.labels.narrow(0, start, count)).sum().item<std::int64_t>());
  }
  model.train();
  Tensor total = full({1}, correct, kFloat64);
  group.all_reduce(total, distributed::ReduceOp::SUM);
  return n ? total.item<double>() / static_cast<double>(n) : 0.0;
}

std::int64_t peak_allocated() {
  return alloc::cpu_allocator().stats().as_map().at("allocated_bytes.all.peak");
}

int run(int argc, char** argv) {
  CommandLine cli("frugal-ddp-train",
                  "Data-parallel training on Fashion-MNIST over MPI (DistributedDataParallel).\n"
                  "Run as: mpirun -np 2 frugal-ddp-train [options]; each rank trains on\n"
                  "batch-size / world-size images per step and gradients are averaged.");
  cli.option("data", "DIR", "Fashion-MNIST idx files", data::kDefaultFashionMnistDir);
  cli.option("model", "NAME", "cnn, mobilenet or mlp", "cnn");
  cli.option("batch-size", "N", "global batch over all ranks (a multiple of the world size)",
             "256");
  cli.option("epochs", "N", "passes over the training set", "1");
  cli.option("max-steps", "N", "stop after N optimizer steps (0: no limit)", "0");
  cli.option("lr", "X", "SGD learning rate", "0.05");
  cli.option("momentum", "X", "SGD momentum", "0.9");
  cli.option("seed", "N", "initialisation and shuffle seed", "0");
  cli.option("bucket-cap-mb", "MB", "gradient bucket size (PyTorch's bucket_cap_mb)", "25");
  cli.option("metrics-json", "PATH", "rank 0 writes the run's figures here as JSON");
  if (!cli.parse(argc, argv)) return 0;

  distributed::init_process_group("mpi");
  auto& group = distributed::default_group();
  const int rank = group.rank(), world = group.size();
  const std::int64_t global_batch = cli.get_int("batch-size");
  if (global_batch <= 0 || global_batch % world != 0)
    throw ConfigError("--batch-size must be a positive multiple of the world size " +
                      std::to_string(world) + ", got " + std::to_string(global_batch));
  const std::int64_t local_batch = global_batch / world;
  const std::int64_t epochs = cli.get_int("epochs"), max_steps = cli.get_int("max-steps");
  if (epochs < 1 || max_steps < 0) throw ConfigError("--epochs must be >= 1 and --max-steps >= 0");
  const auto seed = static_cast<std::uint64_t>(cli.get_int("seed"));

  const data::MnistDataset train = data::load_mnist(cli.get("data"), data::Split::Train);
  const data::MnistDataset test = data::load_mnist(cli.get("data"), data::Split::Test);
  manual_seed(seed + static_cast<std::uint64_t>(rank));  // DDP's broadcast makes them equal
  distributed::DistributedDataParallel model(nn::make_model(cli.get("model")),
                                             {.bucket_cap_mb = cli.get_double("bucket-cap-mb")});
  optim::SGD optimizer(
      model.parameters(),
      optim::SGDOptions(cli.get_double("lr")).momentum(cli.get_double("momentum")));
  data::DistributedSampler sampler(train.size(), world, rank, {.shuffle = true, .seed = seed});
  const std::int64_t steps_per_epoch = sampler.size() / local_batch;
  const std::int64_t total_steps =
      max_steps > 0 ? std::min(max_steps, steps_per_epoch * epochs) : steps_per_epoch * epochs;

  // From here the peak is training's: weights, buckets, optimizer state, batches, activations.
  alloc::cpu_allocator().reset_peak_memory_stats();
  const auto before_training = static_cast<std::int64_t>(alloc::cpu_allocator().memory_allocated());
  ProgressBar bar(rank == 0 ? "train" : "",
                  rank == 0 ? static_cast<std::uint64_t>(total_steps) : 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t step = 0;
  double last_loss = 0, loss_sum = 0;
  for (std::int64_t epoch = 0; epoch < epochs && step < total_steps; ++epoch) {
    sampler.set_epoch(epoch);
    const std::vector<std::int64_t> order = sampler();
    for (std::int64_t b = 0; b < steps_per_epoch && step < total_steps; ++b, ++step) {
      const std::int64_t* rows = order.data() + b * local_batch;
      const Tensor images = train.normalize(gather_rows(train.pixels, rows, local_batch));
      const Tensor labels = gather_rows(train.labels, rows, local_batch);
      optimizer.zero_grad();
      const Tensor loss = cross_entropy(model.forward(images), labels);
      loss.backward();
      model.sync_gradients();
      optimizer.step();
      // The global batch's loss: the mean of the ranks' means (equal shares).
      Tensor global_loss = loss.detach().to(kFloat64).reshape({1});
      group.all_reduce(global_loss, distributed::ReduceOp::AVG);
      last_loss = global_loss.item<double>();
      loss_sum += last_loss;
      if (rank == 0)
        bar.update(static_cast<std::uint64_t>(step + 1), "loss " + std::to_string(last_loss));
    }
  }
  if (rank == 0) bar.finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Training's peak, before evaluation's larger batches could raise it.
  const std::int64_t train_peak = peak_allocated();
  const double accuracy = evaluate(model, test, group);

  // Every rank's peak, gathered by a sum of one-hot vectors.
  Tensor peaks = zeros({world}, kFloat64), step_peaks = zeros({world}, kFloat64);
  peaks.data_ptr<double>()[rank] = static_cast<double>(train_peak);
  step_peaks.data_ptr<double>()[rank] = static_cast<double>(train_peak - before_training);
  group.all_reduce(peaks, distributed::ReduceOp::SUM);
  group.all_reduce(step_peaks, distributed::ReduceOp::SUM);
  for (int r = 0; r < world; ++r) {
    group.barrier();  // ranks print in order
    if (r == rank)
      std::printf(
          "rank %d/%d: batch %lld, peak allocated %s (%s above the %s held before the "
          "first step: data sets, model, buckets %s in %zu), last loss %.4f\n",
          rank, world, static_cast<long long>(local_batch), format_bytes(train_peak).c_str(),
          format_bytes(train_peak - before_training).c_str(), format_bytes(before_training).c_str(),
          format_bytes(static_cast<std::int64_t>(model.bucket_bytes())).c_str(),
          model.bucket_count(), last_loss);
    std::fflush(stdout);
  }
  group.barrier();
  if (rank == 0) {
    const double images_per_s = static_cast<double>(step * global_batch) / seconds;
    std::printf(
        "%lld steps of global batch %lld on %d ranks: mean loss %.4f, %.0f images/s, "
        "test accuracy %.4f\n",
        static_cast<long long>(step), static_cast<long long>(global_batch), world,
        step ? loss_sum / static_cast<double>(step) : 0.0, images_per_s, accuracy);
    if (cli.has("metrics-json")) {
      JsonWriter json;
      json.field("model", cli.get("model"));
      json.field("world_size", static_cast<std::int64_t>(world));
      json.field("cpu_isa", kernels::cpu::cpu_isa_name(kernels::cpu::cpu_isa()));
      json.field("global_batch", global_batch);
      json.field("per_rank_batch", local_batch);
      json.field("steps", step);
      json.field("last_loss", last_loss);
      json.field("mean_loss", step ? loss_sum / static_cast<double>(step) : 0.0);
      json.field("images_per_s", images_per_s);
      json.field("test_accuracy", accuracy);
      json.field("bucket_count", static_cast<std::int64_t>(model.bucket_count()));
      json.field("bucket_bytes", static_cast<std::int64_t>(model.bucket_bytes()));
      auto per_rank = [&](const Tensor& values) {
        std::string list = "[";
        for (int r = 0; r < world; ++r) {
          if (r) list += ',';
          list += std::to_string(static_cast<std::int64_t>(values.data_ptr<double>()[r]));
        }
        return list + "]";
      };
      json.raw("peak_allocated_bytes_per_rank", per_rank(peaks));
      json.raw("step_peak_above_start_bytes_per_rank", per_rank(step_peaks));
      json.write_file(cli.get("metrics-json"));
    }
  }
  distributed::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
