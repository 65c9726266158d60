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
  // Redraws with `done` of the total and, after the bar, a status text ("loss 0.41 ...").
  void update(std::uint64_t done, const std::string& status = "");
  // A line of its own on stderr (a warning, a retry), printed above the bar, which is drawn
  // again below it on the next update.
  void note(const std::string& line);
  void finish();

 private:
  std::string label_;
  std::uint64_t total_;
  bool enabled_;
  bool finished_ = false;
  int last_permille_ = -1;
  std::string status_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace frugal
