// frugal-train's options and the checks of their values.
#include "examples/train/options.h"

#include <cmath>
#include <string>

#include "common/error.h"
#include "common/format.h"
#include "data/mnist.h"
#include "examples/train/monitoring.h"
#include "examples/train/step.h"

namespace frugal::train {

namespace {

void check(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

// --NAME, when given or defaulted, as a whole number in [lo, hi] (an option without a
// default that was not given is not checked).
void within(const CommandLine& cli, const std::string& name, long long lo, long long hi) {
  if (!cli.has(name) && cli.get(name).empty()) return;
  const long long v = cli.get_int(name);
  check(v >= lo && v <= hi, "--" + name + " must be between " + std::to_string(lo) + " and " +
                                std::to_string(hi) + ", got " + cli.get(name));
}

void at_least(const CommandLine& cli, const std::string& name, long long lo) {
  if (!cli.has(name) && cli.get(name).empty()) return;
  check(cli.get_int(name) >= lo,
        "--" + name + " must be at least " + std::to_string(lo) + ", got " + cli.get(name));
}

// --NAME as a byte count ("96M", "1.5GiB"); a ConfigError naming the option otherwise.
std::int64_t bytes_option(const CommandLine& cli, const std::string& name) {
  try {
    return parse_bytes(cli.get(name));
  } catch (const Error& e) {
    throw ConfigError("--" + name + ": " + e.what());
  }
}

}  // namespace

CommandLine make_train_command_line() {
  CommandLine cli("frugal-train",
                  "Trains a CNN on Fashion-MNIST, or on a folder of images, with frugal, showing\n"
                  "loss, accuracy, speed and memory as it goes, and the test accuracy after every\n"
                  "epoch.");
  cli.option("model", "NAME", "cnn, mobilenet or mlp", "cnn");
  cli.option("epochs", "N", "training epochs", "3");
  cli.option("batch-size", "N", "images per step", "128");
  cli.option("lr", "RATE", "learning rate (default 0.05 for sgd, 0.001 for adamw)");
  cli.option("momentum", "M", "SGD momentum", "0.9");
  cli.option("optimizer", "NAME", "sgd or adamw", "sgd");
  cli.option("weight-decay", "W", "weight decay (L2 for sgd, decoupled for adamw)", "0");
  cli.option("lr-schedule", "NAME",
             "constant, or cosine (from --lr down to 0 over the run, set every step)", "constant");
  cli.option("device", "DEVICE", "cpu, cuda or cuda:N", "cpu");
  cli.option("amp", "MODE", "mixed precision: off, bf16 or fp16 (fp16 with dynamic loss scaling)",
             "off");
  cli.option("accum", "K",
             "gradient accumulation: each batch in K micro-batches, one optimizer step", "1");
  cli.flag("oom-recovery",
           "on out-of-memory in a step, free it, empty the cache and retry the same batch in\n"
           "twice as many micro-batches (same effective batch); the new count is kept");
  cli.option("memory-limit", "BYTES",
             "cap the device allocator's reserved memory, as a smaller device would (e.g. 96M)");
  cli.flag("checkpoint-activations",
           "keep only segment inputs in forward, recompute the rest in backward");
  cli.option("checkpoint-segments", "N", "segments for --checkpoint-activations", "4");
  cli.flag("auto-batch-size",
           "train with the largest batch whose step fits --memory-budget (batch-size finder)");
  cli.option("memory-budget", "BYTES",
             "peak allocated bytes for --auto-batch-size, e.g. 512MiB (default: the "
             "allocator's limit)");
  cli.option("threads", "N", "CPU threads for the kernels (default: all cores)");
  cli.option("seed", "N", "seed of initialisation and shuffling", "0");
  cli.option("data", "DIR",
             "Fashion-MNIST idx files; a root of class folders (DIR/<class>/<image>, part held\n"
             "out for evaluation); train/ and test/ class-folder trees or .frs shards; or\n"
             "train-*.frs and test-*.frs shards (docs/data.md)",
             data::kDefaultFashionMnistDir);
  cli.option("val-fraction", "F",
             "part of every class held out for evaluation when DIR has no train/ and test/", "0.1");
  cli.option("image-size", "N",
             "resize the short side to N and crop N x N (centre for evaluation, --augment for\n"
             "training); without it every image must have the same size");
  cli.option("channels", "1|3",
             "convert every image to gray or RGB (default: 3 if any image holds colour)");
  cli.option("augment", "NAME",
             "training augmentation: none, flip, pad-crop or resized-crop (default: none, or\n"
             "with --image-size resized-crop from 64 pixels up and pad-crop below)",
             "auto");
  cli.option("normalize", "MEAN,STD",
             "per-channel normalisation: MEAN,STD, or C means then C stds, or none (default:\n"
             "computed from the training images)");
  cli.option("preview", "PATH.png",
             "write the first training batch, as the model gets it, as a labelled PNG grid");
  cli.option("workers", "N",
             "data loader threads decoding and augmenting (0: on the training thread)", "0");
  cli.option("prefetch", "N", "batches the data loader makes ahead, at most", "2");
  cli.flag("pin-memory", "make batches in pinned memory (for non_blocking copies to a GPU)");
  cli.flag("skip-bad",
           "leave out damaged images (named, counted) instead of stopping at the first");
  cli.option("max-steps", "N", "stop after N training steps in all (quick runs)");
  cli.option("save", "PATH",
             "write a checkpoint after every epoch and at the end (atomically: a run killed\n"
             "while saving leaves the previous checkpoint intact)");
  cli.option("save-every", "N", "with --save: also write the checkpoint every N training steps");
  cli.option("resume", "PATH", "continue from a checkpoint written by --save");
  cli.option("metrics-json", "PATH", "write the run's figures as JSON");
  cli.flag("memory-summary", "print the allocator's memory_summary() at the end");
  cli.option("memory-report", "PATH",
             "record the allocator's history and write its HTML memory timeline here");
  train::add_monitoring_options(cli);
  return cli;
}

void check_train_options(const CommandLine& cli) {
  const long long batch_size = cli.get_int("batch-size");
  at_least(cli, "epochs", 1);
  at_least(cli, "batch-size", 1);
  at_least(cli, "max-steps", 1);
  at_least(cli, "save-every", 1);
  check(!cli.has("save-every") || cli.has("save"),
        "--save-every needs --save PATH (where to write the checkpoint)");
  at_least(cli, "image-size", 1);
  parse_amp(cli.get("amp"));
  const long long accum = cli.get_int("accum");
  check(accum >= 1 && accum <= batch_size, "--accum must be between 1 and --batch-size (" +
                                               std::to_string(batch_size) + "), got " +
                                               std::to_string(accum));
  // More threads than this is a typing mistake, not a machine: OpenMP would try to start them.
  within(cli, "threads", 1, 4096);
  within(cli, "workers", 0, 1024);
  within(cli, "prefetch", 1, 1024);
  at_least(cli, "checkpoint-segments", 1);
  const double val_fraction = cli.get_double("val-fraction");
  check(val_fraction >= 0 && val_fraction < 1,
        "--val-fraction must be at least 0 and below 1, got " + cli.get("val-fraction"));
  for (const char* name : {"lr", "momentum", "weight-decay"})
    check(!cli.has(name) || std::isfinite(cli.get_double(name)),
          std::string("--") + name + " must be a finite number, got " + cli.get(name));
  if (cli.has("memory-limit"))
    check(bytes_option(cli, "memory-limit") > 0,
          "--memory-limit must be more than 0 bytes, got " + cli.get("memory-limit"));
  if (cli.has("memory-budget")) bytes_option(cli, "memory-budget");
}

}  // namespace frugal::train
