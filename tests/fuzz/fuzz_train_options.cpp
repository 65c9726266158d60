// libFuzzer target for frugal-train's command line: the input, split at NUL bytes, is the
// argument list. Parsing and the value checks must end in a ConfigError naming the option, in
// --help, or in options that passed every check; never in a crash or another exception.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/error.h"
#include "examples/train/options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"frugal-train"};
  std::string current;
  for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  if (!current.empty()) args.push_back(current);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  frugal::CommandLine cli = frugal::train::make_train_command_line();
  try {
    if (cli.parse(static_cast<int>(args.size()), argv.data()))
      frugal::train::check_train_options(cli);
  } catch (const frugal::Error&) {
  }
  return 0;
}
