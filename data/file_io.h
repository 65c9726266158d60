// Small file helpers shared by the readers and writers of data/: an input file that knows
// its size and reports short reads, and an atomic writer for files that must never be torn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace frugal::data {

// A file opened for reading. Errors name the file (and what was being read).
class InputFile {
 public:
  // `what` prefixes every error, e.g. "read_idx".
  InputFile(const std::string& path, const char* what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  // Reads up to n bytes; returns how many were read (fewer only at the end of the file).
  std::size_t read_some(void* dst, std::size_t n);
  // Reads exactly n bytes or throws, naming `item` and how many bytes were found.
  void read_exact(void* dst, std::size_t n, const std::string& item);
  void seek(std::uint64_t offset);

 private:
  std::string path_;
  const char* what_;
  std::FILE* file_ = nullptr;
  std::uint64_t size_ = 0;
};

// Writes `path` so that readers see either the old file or the complete new one, never a
// torn one: the bytes go to `path + ".tmp"`, which is fsynced and then renamed over path,
// and the directory is fsynced so the rename itself survives a crash. If the writer is
// destroyed before commit() (an exception while writing), the temporary file is removed.
class AtomicFile {
 public:
  AtomicFile(const std::string& path, const char* what);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t n);
  void commit();
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const std::string& message);

  std::string path_, temp_path_;
  const char* what_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace frugal::data
