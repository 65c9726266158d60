// A progress bar for long work in command-line programs, drawn on stderr only when it is a
// terminal, so logs and pipes stay clean.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace frugal {

class ProgressBar {
 public:
  ProgressBar(std::string label, std::uint64_t total);
  ~ProgressBar();
  void update(std::uint64_t done);
  void finish();

 private:
  std::string label_;
  std::uint64_t total_;
  bool enabled_;
  bool finished_ = false;
  int last_permille_ = -1;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace frugal
