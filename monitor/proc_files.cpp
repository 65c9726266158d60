// /proc and /sys readers: one open and a read loop, no iostreams on the sampling path.
#include "monitor/proc_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace frugal::monitor {

std::optional<std::string> read_text_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

std::optional<std::int64_t> find_kb_field(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':')
      continue;
    const std::string rest(line.substr(key.size() + 1));
    char* after = nullptr;
    const long long value = std::strtoll(rest.c_str(), &after, 10);
    if (after == rest.c_str()) return std::nullopt;
    const bool kilobytes = std::string_view(after).find("kB") != std::string_view::npos;
    return kilobytes ? value * 1024 : value;
  }
  return std::nullopt;
}

}  // namespace frugal::monitor
