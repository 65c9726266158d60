// Input files that report short reads by name, and atomic replacement of output files
// (write to a temporary, fsync, rename, fsync the directory).
#include "data/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace frugal::data {

namespace {

std::string errno_text() { return std::strerror(errno); }

}  // namespace

InputFile::InputFile(const std::string& path, const char* what) : path_(path), what_(what) {
  file_ = std::fopen(path.c_str(), "rb");
  FRUGAL_CHECK(file_ != nullptr, std::string(what) + ": cannot open " + path + ": " + errno_text());
  struct stat st {};
  if (::fstat(::fileno(file_), &st) != 0 || S_ISDIR(st.st_mode)) {
    const std::string why = S_ISDIR(st.st_mode) ? "is a directory" : errno_text();
    std::fclose(file_);
    file_ = nullptr;
    throw Error(std::string(what) + ": cannot read " + path + ": " + why);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (file_) std::fclose(file_);
}

std::size_t InputFile::read_some(void* dst, std::size_t n) {
  if (n == 0) return 0;
  const std::size_t got = std::fread(dst, 1, n, file_);
  FRUGAL_CHECK(got == n || !std::ferror(file_),
               std::string(what_) + ": " + path_ + ": read error: " + errno_text());
  return got;
}

void InputFile::read_exact(void* dst, std::size_t n, const std::string& item) {
  const std::size_t got = read_some(dst, n);
  FRUGAL_CHECK(got == n, std::string(what_) + ": " + path_ + ": truncated " + item + ": expected " +
                             std::to_string(n) + " bytes, found " + std::to_string(got));
}

void InputFile::seek(std::uint64_t offset) {
  FRUGAL_CHECK(::fseeko(file_, static_cast<off_t>(offset), SEEK_SET) == 0,
               std::string(what_) + ": " + path_ + ": cannot seek to byte " +
                   std::to_string(offset) + ": " + errno_text());
}

AtomicFile::AtomicFile(const std::string& path, const char* what)
    : path_(path), temp_path_(path + ".tmp"), what_(what) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  FRUGAL_CHECK(fd_ >= 0, std::string(what) + ": cannot create " + temp_path_ + ": " + errno_text());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFile::fail(const std::string& message) {
  const std::string text = std::string(what_) + ": " + message + ": " + errno_text();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_path_.c_str());
  throw Error(text + " (" + path_ + " left unchanged)");
}

void AtomicFile::write(const void* data, std::size_t n) {
  FRUGAL_CHECK(fd_ >= 0 && !committed_, std::string(what_) + ": " + path_ + ": write after close");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("cannot write " + temp_path_);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void AtomicFile::commit() {
  FRUGAL_CHECK(fd_ >= 0 && !committed_, std::string(what_) + ": " + path_ + ": committed twice");
  // The data must be on disk before the rename makes it visible under the real name;
  // otherwise a crash could leave path naming a file whose blocks were never written.
  if (::fsync(fd_) != 0) fail("cannot fsync " + temp_path_);
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("cannot close " + temp_path_);
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    fail("cannot rename " + temp_path_ + " to " + path_);
  committed_ = true;
  // The rename is an update of the directory, durable only once the directory is synced.
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  const std::string dir = (parent.empty() ? std::filesystem::path(".") : parent).string();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  FRUGAL_CHECK(dfd >= 0, std::string(what_) + ": wrote " + path_ +
                             " but cannot open its directory " + dir +
                             " to sync it: " + errno_text());
  const int rc = ::fsync(dfd);
  const std::string why = rc != 0 ? errno_text() : "";
  ::close(dfd);
  FRUGAL_CHECK(rc == 0, std::string(what_) + ": wrote " + path_ + " but cannot fsync directory " +
                            dir + ": " + why);
}

}  // namespace frugal::data
