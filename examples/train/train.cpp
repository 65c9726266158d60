// frugal-train: trains cnn, mobilenet or mlp on Fashion-MNIST or on the user's image folders
// (examples/train/data_source.h) with SGD or AdamW, showing a progress bar with loss,
// accuracy, images/s and the allocator's memory; evaluates on the test set after every epoch; saves
// and resumes safetensors checkpoints; --metrics-json.
// --device cuda trains on a GPU: each batch is staged in pinned memory and copied with
// non_blocking on the device's copy stream. --amp bf16|fp16 trains in mixed precision, --accum K
// in K micro-batches per step (examples/train/step.h). --tensorboard DIR writes each step's
// memory, loss, accuracy and speed for TensorBoard; a leak watch checks memory every epoch
// (examples/train/monitoring.h).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "allocator/memory_report.h"
#include "common/cli.h"
#include "common/error.h"
#include "common/format.h"
#include "common/json_writer.h"
#include "common/progress.h"
#include "data/loader.h"
#include "data/mnist.h"
#include "examples/train/checkpoint.h"
#include "examples/train/data_report.h"
#include "examples/train/data_source.h"
#include "examples/train/monitoring.h"
#include "examples/train/options.h"
#include "examples/train/preview.h"
#include "examples/train/setup.h"
#include "examples/train/step.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/parallel.h"
#include "nn/nn.h"

using namespace frugal;

namespace {

std::int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct EpochResult {
  std::int64_t epoch;
  double train_loss, train_accuracy, test_accuracy, images_per_sec;
};

int run(int argc, char** argv) {
  CommandLine cli = train::make_train_command_line();
  if (!cli.parse(argc, argv)) return 0;
  train::check_train_options(cli);

  const std::string model_name = cli.get("model");
  const std::string optimizer_name = cli.get("optimizer");
  const std::int64_t epochs = cli.get_int("epochs");
  std::int64_t batch_size = cli.get_int("batch-size");
  const double lr =
      cli.has("lr") ? cli.get_double("lr") : (optimizer_name == "adamw" ? 1e-3 : 0.05);
  const std::uint64_t seed = static_cast<std::uint64_t>(cli.get_int("seed"));
  const std::int64_t max_steps = cli.has("max-steps") ? cli.get_int("max-steps") : -1;
  const std::int64_t save_every = cli.has("save-every") ? cli.get_int("save-every") : 0;
  const train::AmpMode amp = train::parse_amp(cli.get("amp"));
  std::int64_t accum = cli.get_int("accum");
  if (cli.has("threads")) kernels::cpu::set_num_threads(static_cast<int>(cli.get_int("threads")));
  // Read the kernels' level now, so that a FRUGAL_CPU_ISA this CPU cannot run stops the run
  // here with its reason rather than at the first convolution.
  const std::string cpu_isa = kernels::cpu::cpu_isa_name(kernels::cpu::cpu_isa());
  const Device requested(cli.get("device"));
  auto& allocator =
      allocator_for(requested, "--device");  // the clear error for a missing GPU, first
  if (cli.has("memory-limit"))
    allocator.set_memory_limit(static_cast<std::size_t>(parse_bytes(cli.get("memory-limit"))));
  // The last 200,000 allocator events (about 6 MiB of ring), tagged with op and module.
  if (cli.has("memory-report")) allocator.record_history(200000);
  const Device device = resolve_device(requested);

  const auto source = train::DataSource::open(
      {.path = cli.get("data"),
       .batch_size = batch_size,
       .seed = seed,
       .workers = static_cast<int>(cli.get_int("workers")),
       .prefetch = static_cast<int>(cli.get_int("prefetch")),
       .pin_memory = cli.has("pin-memory"),
       .skip_bad = cli.has("skip-bad"),
       .image_size = cli.has("image-size") ? static_cast<int>(cli.get_int("image-size")) : 0,
       .channels = cli.has("channels") ? static_cast<int>(cli.get_int("channels")) : 0,
       .normalize = cli.has("normalize") ? cli.get("normalize") : "",
       .augment = cli.get("augment"),
       .val_fraction = cli.get_double("val-fraction")});
  const train::DataInfo& data_info = source->info();
  // The model takes the data's channels and size and predicts its classes.
  const nn::ModelInput model_input{data_info.channels, data_info.height, data_info.width,
                                   static_cast<std::int64_t>(data_info.classes.size())};

  manual_seed(seed);
  std::shared_ptr<nn::Sequential> model = nn::make_model(model_name, model_input);
  if (cli.has("checkpoint-activations"))  // same modules and parameters, recomputed in backward
    model = nn::checkpoint_segments(model, static_cast<int>(cli.get_int("checkpoint-segments")));
  model->to(device);  // before the optimizer takes the parameters
  const nn::OptimizerFactory make_run_optimizer = [&](const std::vector<Tensor>& params) {
    return train::make_optimizer(optimizer_name, params, lr, cli.get_double("momentum"),
                                 cli.get_double("weight-decay"));
  };
  auto optimizer = make_run_optimizer(model->parameters());
  // Loss scaling only where float16 needs it; bf16 and float32 step plainly.
  amp::GradScaler scaler(amp::GradScalerOptions{.enabled = amp.needs_scaler()});
  if (cli.has("auto-batch-size")) {
    batch_size = train::auto_batch_size(
        *model, make_run_optimizer, amp, model_input, device, accum,
        cli.has("memory-budget") ? parse_bytes(cli.get("memory-budget")) : 0);
  }
  train::TrainState state;
  state.amp = amp.name;
  state.model = model_name;
  state.optimizer = optimizer_name;
  state.lr_schedule = cli.get("lr-schedule");
  state.seed = seed;
  if (cli.has("resume")) {
    state = train::load_checkpoint(cli.get("resume"), *model, *optimizer, scaler, state);
    FRUGAL_CHECK(state.seed == seed, "--resume: the checkpoint was made with --seed " +
                                         std::to_string(state.seed) +
                                         "; pass the same seed to continue the same run");
    std::fprintf(stderr, "resumed from %s at epoch %lld, step %lld\n", cli.get("resume").c_str(),
                 static_cast<long long>(state.epoch + 1),
                 static_cast<long long>(state.step_in_epoch));
  }

  const auto schedule =
      train::make_schedule(state.lr_schedule, *optimizer, epochs * source->num_batches());
  if (schedule)
    schedule->set_epoch(state.global_step);  // the rate of the step a resumed run starts at

  std::printf(
      "frugal-train: %s on %s, %lld parameters, %s lr %g (%s), batch %lld%s, amp %s, %d threads, "
      "%lld "
      "train / %lld test images\n",
      model_name.c_str(), device.str().c_str(), static_cast<long long>(model->parameter_count()),
      optimizer_name.c_str(), lr, state.lr_schedule.c_str(), static_cast<long long>(batch_size),
      accum > 1 ? (" in " + std::to_string(accum) + " micro-batches").c_str() : "",
      amp.name.c_str(), kernels::cpu::get_num_threads(),
      static_cast<long long>(source->train_size()), static_cast<long long>(source->test_size()));
  std::printf("kernels: %s\n", kernels::cpu::describe_cpu_isa().c_str());
  std::printf("data: %s (%s), %lld loader workers%s\n", cli.get("data").c_str(),
              data_info.kind.c_str(), cli.get_int("workers"),
              cli.has("pin-memory") ? ", pinned batches" : "");
  train::print_data_info(data_info, *source, seed);
  // TensorBoard scalars per step (--tensorboard), host memory and the leak watch per epoch.
  const auto training_monitor = train::make_training_monitor(cli, device, allocator, state.epoch);
  std::vector<EpochResult> results;
  double train_seconds = 0;
  std::int64_t train_images = 0;
  std::int64_t skipped_steps = 0;  // fp16 steps the scaler skipped for inf/NaN gradients
  double test_accuracy = 0;
  bool stopped_early = false;
  bool preview_pending = cli.has("preview");
  const bool oom_recovery = cli.has("oom-recovery");
  train::OomRecovery recovery;
  recovery.accum = accum;
  // The first steps' mean losses, for comparing runs step by step (--metrics-json).
  constexpr std::size_t kRecordedStepLosses = 100;
  std::vector<double> step_losses;

  auto save = [&] {
    if (!cli.has("save")) return;
    state.rng_seed = default_generator().seed();
    state.rng_offset = default_generator().offset();
    train::save_checkpoint(cli.get("save"), *model, *optimizer, scaler, state);
  };

  while (state.epoch < epochs) {
    source->set_epoch(state.epoch);
    const std::int64_t batches = source->num_batches();
    ProgressBar bar("epoch " + std::to_string(state.epoch + 1) + "/" + std::to_string(epochs),
                    static_cast<std::uint64_t>(batches));
    // A run resumed mid-epoch carries on the epoch's sums, so that it reports the same epoch.
    double loss_sum = state.epoch_loss_sum;
    std::int64_t seen = state.epoch_seen, correct = state.epoch_correct;
    const std::int64_t seen_before = seen;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t b = state.step_in_epoch; b < batches; ++b) {
      if (max_steps >= 0 && state.global_step >= max_steps) {
        stopped_early = true;
        break;
      }
      const data::Batch batch = source->batch(b);
      if (preview_pending) {
        const train::PreviewResult p = train::write_preview(cli.get("preview"), batch, data_info);
        std::printf("preview: %s, %d images of the first batch in %d columns (%dx%d)\n",
                    cli.get("preview").c_str(), p.images, p.columns, p.width, p.height);
        preview_pending = false;
      }
      const Tensor images = train::to_device(batch.data, device),
                   targets = train::to_device(batch.target, device);
      train::StepResult r;
      if (oom_recovery) {
        const std::size_t retries_before = recovery.history.size();
        r = train::train_step_recovering(*model, *optimizer, scaler, amp, images, targets,
                                         allocator, state.global_step + 1, recovery);
        for (std::size_t i = retries_before; i < recovery.history.size(); ++i) {
          const auto& retry = recovery.history[i];
          bar.note("step " + std::to_string(retry.step) + " ran out of memory in " +
                   std::to_string(retry.from) + " micro-batch" + (retry.from == 1 ? "" : "es") +
                   "; retried in " + std::to_string(retry.to) +
                   " (--oom-recovery): " + retry.message);
        }
      } else {
        try {
          r = train::train_step(*model, *optimizer, scaler, amp, images, targets, accum);
        } catch (const OutOfMemoryError& e) {
          throw Error(std::string(e.what()) + "\nat training step " +
                      std::to_string(state.global_step + 1) +
                      "; --oom-recovery retries such a step in smaller micro-batches, and "
                      "--accum, --batch-size or --auto-batch-size make every step smaller");
        }
      }
      if (step_losses.size() < kRecordedStepLosses)
        step_losses.push_back(r.loss_sum / static_cast<double>(batch.target.size(0)));
      if (schedule) schedule->step();
      skipped_steps += r.stepped ? 0 : 1;
      const std::int64_t n = batch.target.size(0);
      correct += r.correct;
      loss_sum += r.loss_sum;
      seen += n;
      ++state.global_step;
      state.step_in_epoch = b + 1;
      state.epoch_loss_sum = loss_sum;
      state.epoch_seen = seen;
      state.epoch_correct = correct;
      // The last batch of an epoch is saved after its evaluation, below.
      if (save_every > 0 && state.global_step % save_every == 0 && b + 1 < batches) save();
      const double elapsed = seconds_since(t0);
      char status[160];
      std::snprintf(status, sizeof status, "loss %.4f acc %.2f%% %.0f img/s mem %s / %s",
                    loss_sum / static_cast<double>(seen),
                    100.0 * static_cast<double>(correct) / static_cast<double>(seen),
                    static_cast<double>(seen - seen_before) / std::max(elapsed, 1e-9),
                    format_bytes(static_cast<std::int64_t>(allocator.memory_allocated())).c_str(),
                    format_bytes(static_cast<std::int64_t>(allocator.memory_reserved())).c_str());
      bar.update(static_cast<std::uint64_t>(b + 1), status);
      training_monitor->on_step(
          state.global_step,
          {.loss = r.loss_sum / static_cast<double>(n),
           .accuracy = static_cast<double>(r.correct) / static_cast<double>(n),
           .images_per_sec = static_cast<double>(seen - seen_before) / std::max(elapsed, 1e-9)});
    }
    bar.finish();
    const double epoch_seconds = seconds_since(t0);
    train_seconds += epoch_seconds;
    train_images += seen - seen_before;
    if (seen == seen_before) break;
    test_accuracy = train::evaluate(*model, *source, batch_size, device, amp);
    const EpochResult r{state.epoch + 1, loss_sum / static_cast<double>(seen),
                        static_cast<double>(correct) / static_cast<double>(seen), test_accuracy,
                        static_cast<double>(seen - seen_before) / epoch_seconds};
    results.push_back(r);
    training_monitor->on_epoch_end(r.epoch, state.global_step, test_accuracy);
    std::printf(
        "epoch %lld: train loss %.4f, train accuracy %.2f%%, test accuracy %.2f%%, %.0f img/s, "
        "peak allocated %s, reserved %s\n",
        static_cast<long long>(r.epoch), r.train_loss, 100 * r.train_accuracy,
        100 * r.test_accuracy, r.images_per_sec,
        format_bytes(allocator.stats().allocated_bytes.all().peak).c_str(),
        format_bytes(static_cast<std::int64_t>(allocator.memory_reserved())).c_str());
    std::fflush(stdout);
    if (stopped_early) break;
    ++state.epoch;  // a resume from this checkpoint starts the next epoch
    state.step_in_epoch = 0;
    state.epoch_loss_sum = 0;
    state.epoch_seen = state.epoch_correct = 0;
    save();
  }
  if (stopped_early) save();  // mid-epoch: a resume continues from the next batch

  if (cli.has("memory-summary")) std::printf("%s", allocator.memory_summary().c_str());
  if (oom_recovery)
    std::printf("oom recovery: %lld out-of-memory retr%s; steps now run in %lld micro-batch%s\n",
                static_cast<long long>(recovery.retries), recovery.retries == 1 ? "y" : "ies",
                static_cast<long long>(recovery.accum), recovery.accum == 1 ? "" : "es");
  if (cli.has("memory-report")) {
    alloc::write_memory_report(allocator, cli.get("memory-report"));
    std::printf("memory report: %s\n", cli.get("memory-report").c_str());
  }
  const std::vector<std::string> skipped_files = source->skipped_files();
  if (cli.has("skip-bad")) {
    std::printf("skipped %zu damaged file%s (--skip-bad)%s\n", skipped_files.size(),
                skipped_files.size() == 1 ? "" : "s", skipped_files.empty() ? "" : ":");
    for (const auto& f : skipped_files) std::printf("  %s\n", f.c_str());
  }
  const auto stats = allocator.stats();
  const double images_per_sec =
      train_seconds > 0 ? static_cast<double>(train_images) / train_seconds : 0;
  std::printf(
      "done: %lld steps, test accuracy %.2f%%, %.0f train img/s, peak allocated %s, peak reserved "
      "%s, "
      "peak RSS %s\n",
      static_cast<long long>(state.global_step), 100 * test_accuracy, images_per_sec,
      format_bytes(stats.allocated_bytes.all().peak).c_str(),
      format_bytes(stats.reserved_bytes.all().peak).c_str(),
      format_bytes(peak_rss_bytes()).c_str());
  if (cli.has("metrics-json")) {
    JsonWriter j;
    j.field("model", model_name);
    j.field("device", device.str());
    j.field("optimizer", optimizer_name);
    j.field("lr_schedule", state.lr_schedule);
    j.field("epochs", epochs);
    j.field("steps", state.global_step);
    j.field("batch_size", batch_size);
    j.field("amp", amp.name);
    j.field("accum", oom_recovery ? recovery.accum : accum);
    j.field("oom_recovery", oom_recovery);
    j.field("oom_retries", recovery.retries);
    j.field("num_ooms", stats.num_ooms);
    j.field("num_alloc_retries", stats.num_alloc_retries);
    if (cli.has("memory-limit"))
      j.field("memory_limit_bytes", static_cast<std::int64_t>(allocator.memory_limit()));
    std::vector<std::string> losses;
    for (double l : step_losses) losses.push_back(JsonWriter::number(l));
    j.raw("step_losses", JsonWriter::array(losses));
    j.field("skipped_steps", skipped_steps);
    if (scaler.is_enabled()) j.field("loss_scale", scaler.get_scale());
    j.field("threads", static_cast<std::int64_t>(kernels::cpu::get_num_threads()));
    j.field("cpu_isa", cpu_isa);
    j.field("data", data_info.kind);
    j.raw("data_split", train::split_json(data_info, *source));
    j.field("channels", data_info.channels);
    j.field("image_height", data_info.height);
    j.field("image_width", data_info.width);
    j.field("classes", static_cast<std::int64_t>(data_info.classes.size()));
    j.field("augment", data_info.augment);
    j.raw("normalize_mean", train::float_list(data_info.mean));
    j.raw("normalize_std", train::float_list(data_info.std));
    j.field("workers", static_cast<std::int64_t>(cli.get_int("workers")));
    j.field("skipped_files", static_cast<std::int64_t>(skipped_files.size()));
    std::vector<std::string> names;
    for (const auto& f : skipped_files) names.push_back(JsonWriter::quote(f));
    j.raw("skipped", JsonWriter::array(names));
    j.field("test_accuracy", test_accuracy);
    j.field("train_images_per_sec", images_per_sec);
    j.field("peak_allocated_bytes", stats.allocated_bytes.all().peak);
    j.field("peak_reserved_bytes", stats.reserved_bytes.all().peak);
    j.field("peak_rss_bytes", peak_rss_bytes());
    j.field("parameters", model->parameter_count());
    std::vector<std::string> per_epoch;
    for (const auto& r : results) {
      JsonWriter e;
      e.field("epoch", r.epoch);
      e.field("train_loss", r.train_loss);
      e.field("train_accuracy", r.train_accuracy);
      e.field("test_accuracy", r.test_accuracy);
      e.field("images_per_sec", r.images_per_sec);
      per_epoch.push_back(e.str());
    }
    j.raw("per_epoch", JsonWriter::array(per_epoch));
    j.write_file(cli.get("metrics-json"));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
