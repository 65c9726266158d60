// frugal-train's command line: every option with its help text, and the checks of what the
// values alone can tell (ranges, names, sizes), so that a mistake stops the run before any data
// is read. tests/fuzz/fuzz_train_options.cpp runs both on arbitrary argument lists.
#pragma once

#include "common/cli.h"

namespace frugal::train {

// The command line with every frugal-train option declared, not yet parsed.
CommandLine make_train_command_line();

// After a parse: a frugal::ConfigError naming the option whose value is out of range,
// malformed or inconsistent with another (--accum above --batch-size, --save-every without
// --save). What needs the data or the device is checked where they are opened.
void check_train_options(const CommandLine& cli);

}  // namespace frugal::train
