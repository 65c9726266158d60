// frugal-memlab's subcommands, one per memory technique, each in its own file: a small real
// experiment whose table compares the technique against the plain way (and checks the result).
#pragma once

namespace frugal::memlab {

// Each takes the subcommand's own argv (argv[0] is "frugal-memlab NAME") and returns the
// exit code; errors are frugal::Error, turned into a message by main.
int batch_size_lab(int argc, char** argv);
int accumulate_lab(int argc, char** argv);
int empty_cache_lab(int argc, char** argv);
int amp_lab(int argc, char** argv);
int loader_lab(int argc, char** argv);
int leak_lab(int argc, char** argv);
int no_grad_lab(int argc, char** argv);
int architectures_lab(int argc, char** argv);
int checkpoint_lab(int argc, char** argv);
int monitor_lab(int argc, char** argv);
int quantize_lab(int argc, char** argv);
int prune_lab(int argc, char** argv);

}  // namespace frugal::memlab
