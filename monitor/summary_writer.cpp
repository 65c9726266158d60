// SummaryWriter: framing events into a TFRecord file, buffered per step (see summary_writer.h).
#include "monitor/summary_writer.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "common/error.h"
#include "monitor/event_file.h"

namespace frugal::monitor {

namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string event_file_name(const std::string& suffix) {
  static std::atomic<int> writers_made{0};
  const auto seconds = static_cast<long long>(unix_time_now());
  return "events.out.tfevents." + std::to_string(seconds) + "." + host_name() + "." +
         std::to_string(::getpid()) + "." + std::to_string(writers_made++) + suffix;
}

}  // namespace

double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

SummaryWriter::SummaryWriter(const std::string& log_dir, SummaryWriterOptions options)
    : log_dir_(log_dir), options_(std::move(options)) {
  FRUGAL_CHECK(!log_dir.empty(), "SummaryWriter: the log directory is empty");
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  FRUGAL_CHECK(!ec,
               "SummaryWriter: cannot create the log directory '" + log_dir + "': " + ec.message());
  FRUGAL_CHECK(std::filesystem::is_directory(log_dir, ec),
               "SummaryWriter: '" + log_dir + "' exists and is not a directory");
  path_ = (std::filesystem::path(log_dir) / event_file_name(options_.filename_suffix)).string();
  file_ = std::fopen(path_.c_str(), "wb");
  FRUGAL_CHECK(file_ != nullptr,
               "SummaryWriter: cannot create '" + path_ + "': " + std::strerror(errno));
  // The version event goes out at once: TensorBoard recognises the file from its first record.
  append_event(encode_file_version_event(unix_time_now()));
  try {
    flush_locked();
  } catch (...) {
    std::fclose(file_);  // no destructor runs for a constructor that throws
    throw;
  }
}

SummaryWriter::~SummaryWriter() {
  try {
    close();
  } catch (const std::exception& e) {
    std::cerr << "warning: " << e.what() << "\n";
  }
}

void SummaryWriter::add_scalar(const std::string& tag, double value, std::int64_t step,
                               std::optional<double> wall_time) {
  FRUGAL_CHECK(!tag.empty(), "SummaryWriter::add_scalar: the tag is empty");
  const std::string event = encode_scalar_event(wall_time ? *wall_time : unix_time_now(), step, tag,
                                                static_cast<float>(value));
  std::lock_guard<std::mutex> lock(mutex_);
  FRUGAL_CHECK(file_ != nullptr,
               "SummaryWriter::add_scalar('" + tag + "'): the writer of '" + path_ + "' is closed");
  // A new step means the previous one is complete: write it before buffering this one.
  if (options_.flush_each_step && pending_step_ && *pending_step_ != step) flush_locked();
  append_event(event);
  pending_step_ = step;
  const double since_flush =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_flush_).count();
  if (since_flush >= options_.flush_secs) flush_locked();
}

void SummaryWriter::append_event(const std::string& event) {
  pending_ += frame_record(event);
  ++events_written_;
}

void SummaryWriter::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_) flush_locked();
}

void SummaryWriter::flush_locked() {
  last_flush_ = std::chrono::steady_clock::now();
  if (pending_.empty()) return;
  const bool written = std::fwrite(pending_.data(), 1, pending_.size(), file_) == pending_.size() &&
                       std::fflush(file_) == 0;
  pending_.clear();
  pending_step_.reset();
  FRUGAL_CHECK(written, "SummaryWriter: cannot write '" + path_ + "': " + std::strerror(errno));
}

void SummaryWriter::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!file_) return;
  std::FILE* file = file_;
  try {
    flush_locked();
  } catch (...) {
    std::fclose(file);
    file_ = nullptr;
    throw;
  }
  file_ = nullptr;
  FRUGAL_CHECK(std::fclose(file) == 0,
               "SummaryWriter: cannot close '" + path_ + "': " + std::strerror(errno));
}

}  // namespace frugal::monitor
