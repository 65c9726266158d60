// frugal-memlab: one subcommand per memory technique, each a small real experiment that
// prints a before/after table (or --json). `frugal-memlab --help` lists them.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/cli.h"
#include "common/error.h"
#include "examples/memlab/subcommands.h"

using namespace frugal;

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"batch-size", memlab::batch_size_lab,
     "peak memory vs batch; the batch-size finder's prediction vs the truth"},
    {"accumulate", memlab::accumulate_lab,
     "4 micro-batches of 32 vs one batch of 128: gradients and peak"},
    {"empty-cache", memlab::empty_cache_lab,
     "reserved before/after empty_cache, and what the next allocation costs"},
    {"amp", memlab::amp_lab,
     "float32 vs bfloat16 vs float16 autocast: peak memory, speed, accuracy"},
    {"loader", memlab::loader_lab,
     "DataLoader workers 0/2, pinned or not, PNG vs shards: images/s and RSS"},
    {"leak", memlab::leak_lab, "a leaking loop and a correct one under the leak watch"},
    {"no-grad", memlab::no_grad_lab,
     "inference memory with autograd, NoGradGuard and InferenceMode"},
    {"architectures", memlab::architectures_lab,
     "mlp vs cnn vs mobilenet: parameters, activations, accuracy"},
    {"checkpoint", memlab::checkpoint_lab,
     "activation checkpointing: peak memory, time, identical gradients"},
    {"monitor", memlab::monitor_lab,
     "memory_summary, the device view, the HTML report and TensorBoard files"},
    {"quantize", memlab::quantize_lab,
     "float32 vs dynamic int8 Linear weights: weight bytes, peak, images/s, accuracy"},
    {"prune", memlab::prune_lab,
     "unstructured vs structured (shrunk) pruning: zeros, bytes, peak, accuracy"},
};

void print_help() {
  std::printf(
      "Usage: frugal-memlab SUBCOMMAND [OPTIONS]\n\n"
      "Each subcommand runs a small real experiment on the CPU and prints a before/after table\n"
      "(--json: one JSON object). Memory figures come from the CPU allocator's exact counters.\n"
      "`frugal-memlab SUBCOMMAND --help` shows its options.\n\nSubcommands:\n");
  for (const Subcommand& s : kSubcommands) std::printf("  %-14s %s\n", s.name, s.summary);
}

int run(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  for (const Subcommand& s : kSubcommands) {
    if (std::strcmp(argv[1], s.name) != 0) continue;
    std::string program = std::string("frugal-memlab ") + s.name;
    argv[1] = program.data();
    return s.run(argc - 1, argv + 1);
  }
  throw ConfigError(std::string("frugal-memlab: unknown subcommand '") + argv[1] +
                    "' (see frugal-memlab --help for the list)");
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
