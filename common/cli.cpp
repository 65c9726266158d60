// Command-line parsing and the error-to-exit-code wrapper of frugal's programs.
#include "common/cli.h"

#include <cstdio>
#include <iostream>
#include <sstream>

#include "common/error.h"

namespace frugal {

CommandLine::CommandLine(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {
  flag("help", "print this help and exit");
}

void CommandLine::flag(const std::string& name, const std::string& help) {
  order_.push_back(name);
  specs_[name] = Spec{true, "", help, ""};
}

void CommandLine::option(const std::string& name, const std::string& metavar,
                         const std::string& help, const std::string& default_value) {
  order_.push_back(name);
  specs_[name] = Spec{false, metavar, help, default_value};
}

void CommandLine::positional(const std::string& name, const std::string& help) {
  positional_specs_.emplace_back(name, help);
}

void CommandLine::fail(const std::string& message) const {
  std::string text = program_;
  text.append(": ").append(message);
  throw ConfigError(text);
}

bool CommandLine::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional_values_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    const std::size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const auto spec = specs_.find(name);
    if (spec == specs_.end()) {
      fail("unknown option '--" + name + "' (see --help)");
    }
    if (spec->second.is_flag) {
      if (inline_value) fail("--" + name + " takes no value");
      values_.insert_or_assign(name, std::string("1"));
    } else {
      if (!inline_value) {
        if (i + 1 >= argc) {
          fail("--" + name + " needs a value (" + spec->second.metavar + ")");
        }
        value = argv[++i];
      }
      values_.insert_or_assign(name, value);
    }
  }
  if (has("help")) {
    std::cout << help();
    return false;
  }
  if (positional_values_.size() != positional_specs_.size()) {
    std::string expected;
    for (const auto& [name, h] : positional_specs_) expected += " " + name;
    fail("expected" + (expected.empty() ? std::string(" no arguments") : expected) + ", got " +
         std::to_string(positional_values_.size()) + " positional argument(s) (see --help)");
  }
  return true;
}

bool CommandLine::has(const std::string& name) const { return values_.count(name) != 0; }

std::string CommandLine::get(const std::string& name) const {
  const auto v = values_.find(name);
  if (v != values_.end()) return v->second;
  const auto spec = specs_.find(name);
  return spec == specs_.end() ? "" : spec->second.default_value;
}

double CommandLine::get_double(const std::string& name) const {
  const std::string text = get(name);
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    fail("--" + name + " expects a number, got '" + text + "'");
  }
  return value;
}

long long CommandLine::get_int(const std::string& name) const {
  const std::string text = get(name);
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    fail("--" + name + " expects a whole number, got '" + text + "'");
  }
  return value;
}

std::string CommandLine::help() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [options]";
  for (const auto& [name, h] : positional_specs_) out << " " << name;
  out << "\n\n" << summary_ << "\n";
  if (!positional_specs_.empty()) {
    out << "\narguments:\n";
    for (const auto& [name, h] : positional_specs_) {
      out << "  " << name << std::string(name.size() < 24 ? 24 - name.size() : 1, ' ') << h << "\n";
    }
  }
  out << "\noptions:\n";
  for (const std::string& name : order_) {
    const Spec& s = specs_.at(name);
    std::string left = "--" + name + (s.is_flag ? "" : " " + s.metavar);
    // A help text's own line breaks continue under its first line.
    std::string help = s.help;
    for (std::size_t at = help.find('\n'); at != std::string::npos; at = help.find('\n', at + 1))
      help.insert(at + 1, std::string(26, ' '));
    out << "  " << left << std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') << help;
    if (!s.default_value.empty()) out << " (default: " << s.default_value << ")";
    out << "\n";
  }
  return out.str();
}

int run_main(int argc, char** argv, int (*body)(int, char**)) {
  try {
    return body(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}

}  // namespace frugal
