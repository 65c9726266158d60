// Drawing of the terminal progress bar.
#include "common/progress.h"

#include <unistd.h>

#include <cstdio>

namespace frugal {

ProgressBar::ProgressBar(std::string label, std::uint64_t total)
    : label_(std::move(label)),
      total_(total == 0 ? 1 : total),
      enabled_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(std::uint64_t done, const std::string& status) {
  if (!enabled_) return;
  const int permille = static_cast<int>(1000 * (done > total_ ? total_ : done) / total_);
  const auto now = std::chrono::steady_clock::now();
  // Redraw on progress, or for a new status at most ten times a second.
  if (!status.empty()) {
    if (permille == last_permille_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    status_ = status;
  } else if (permille == last_permille_) {
    return;
  }
  last_permille_ = permille;
  last_draw_ = now;
  constexpr int kWidth = 30;
  const int filled = permille * kWidth / 1000;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r%s [%.*s%*s] %5.1f%% %6.1fs %s\x1b[K", label_.c_str(), filled,
               "##############################", kWidth - filled, "", permille / 10.0, seconds,
               status_.c_str());
  std::fflush(stderr);
}

void ProgressBar::note(const std::string& line) {
  // What the program printed before comes first, and the bar's line is cleared, so the note
  // does not end in the bar's remains.
  std::fflush(stdout);
  std::fprintf(stderr, "%s%s\n", enabled_ && !finished_ ? "\r\x1b[K" : "", line.c_str());
  last_permille_ = -1;  // redraw at the next update
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  last_permille_ = -1;
  update(total_, status_);
  std::fputc('\n', stderr);
}

}  // namespace frugal
