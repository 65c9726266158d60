// A small GNU-style command-line parser for frugal's programs: --flag, --option VALUE or
// --option=VALUE, positional arguments, and a --help text generated from the declarations.
// Mistakes (unknown option, missing value) are frugal::ConfigError with the option's name.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace frugal {

class CommandLine {
 public:
  CommandLine(std::string program, std::string summary);

  void flag(const std::string& name, const std::string& help);
  void option(const std::string& name, const std::string& metavar, const std::string& help,
              const std::string& default_value = "");
  void positional(const std::string& name, const std::string& help);

  // Parses argv; returns false when --help was asked (the help text is then printed).
  bool parse(int argc, char** argv);

  bool has(const std::string& name) const;  // a flag given, or an option given explicitly
  std::string get(const std::string& name) const;
  double get_double(const std::string& name) const;
  long long get_int(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positional_values_; }
  std::string help() const;

 private:
  struct Spec {
    bool is_flag;
    std::string metavar, help, default_value;
  };
  [[noreturn]] void fail(const std::string& message) const;

  std::string program_, summary_;
  std::vector<std::string> order_;
  std::map<std::string, Spec> specs_;
  std::vector<std::pair<std::string, std::string>> positional_specs_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_values_;
};

// Runs `body` and turns a frugal::Error into a one-line message and exit code 2, so that
// no bad input ends in an abort.
int run_main(int argc, char** argv, int (*body)(int, char**));

}  // namespace frugal
