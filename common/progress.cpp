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

void ProgressBar::update(std::uint64_t done) {
  if (!enabled_) return;
  const int permille = static_cast<int>(1000 * (done > total_ ? total_ : done) / total_);
  if (permille == last_permille_) return;
  last_permille_ = permille;
  constexpr int kWidth = 30;
  const int filled = permille * kWidth / 1000;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r%s [%.*s%*s] %5.1f%% %6.1fs", label_.c_str(), filled,
               "##############################", kWidth - filled, "", permille / 10.0, seconds);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  update(total_);
  std::fputc('\n', stderr);
}

}  // namespace frugal
