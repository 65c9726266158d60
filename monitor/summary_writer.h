// SummaryWriter: TensorBoard scalars from C++, named and used like PyTorch's
// torch.utils.tensorboard.SummaryWriter — add_scalar(tag, value, step) — writing an
// events.out.tfevents.* file that TensorBoard reads, with no TensorFlow or protobuf.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

namespace frugal::monitor {

struct SummaryWriterOptions {
  // Write the buffered events out when a later step begins, so a crash loses at most the
  // step in progress and TensorBoard sees each step complete.
  bool flush_each_step = true;
  // And in any case when this many seconds have passed since the last write (PyTorch's
  // flush_secs; checked on each add_scalar, no thread).
  double flush_secs = 120;
  // Appended to the file name (PyTorch's filename_suffix).
  std::string filename_suffix;
};

class SummaryWriter {
 public:
  // Creates `log_dir` if needed and a new event file in it; throws frugal::Error naming the
  // directory or file when that is not possible.
  explicit SummaryWriter(const std::string& log_dir, SummaryWriterOptions options = {});
  ~SummaryWriter();  // flushes; errors at this point are reported on stderr
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // One scalar point of the curve `tag` ("memory/allocated_bytes"). TensorBoard stores
  // scalars as float32; wall_time defaults to now (seconds since the Unix epoch).
  void add_scalar(const std::string& tag, double value, std::int64_t step,
                  std::optional<double> wall_time = std::nullopt);
  // Writes out everything buffered. Throws frugal::Error naming the file on a failed write.
  void flush();
  // Flushes and closes the file; later add_scalar calls are errors.
  void close();

  const std::string& log_dir() const { return log_dir_; }
  // events.out.tfevents.<time>.<host>.<pid>.<n><suffix> — PyTorch's name; TensorBoard needs
  // only "tfevents" in it, the rest keeps two writers in one directory apart.
  const std::string& file_path() const { return path_; }
  std::int64_t events_written() const { return events_written_; }

 private:
  void append_event(const std::string& event);
  void flush_locked();

  std::string log_dir_, path_;
  SummaryWriterOptions options_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;
  std::string pending_;  // framed records not yet written
  std::optional<std::int64_t> pending_step_;
  std::chrono::steady_clock::time_point last_flush_;
  std::int64_t events_written_ = 0;
};

// Seconds since the Unix epoch, with sub-second precision (an Event's wall_time).
double unix_time_now();

}  // namespace frugal::monitor
