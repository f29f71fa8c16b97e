// Files read with a bound, and owned file descriptors: for configuration and credential files,
// whose size and kind come from outside the process.
//
//   std::string error;
//   std::optional<std::string> pem = eoc::ReadFileLimited(path, 1 << 20, &error);
//   if (!pem) throw ConfigError(path + ": " + error);   // "No such file or directory", ...
#pragma once

#include <unistd.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace eoc {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }

  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// strerror(err), thread-safely.
std::string ErrnoText(int err);

// Reads a whole regular file of at most `max_bytes`. On failure returns nullopt and sets *error to
// why ("No such file or directory", "larger than 1048576 bytes", "not a regular file"), so that
// each caller can name the file and field in its own error type.
std::optional<std::string> ReadFileLimited(const std::string& path, std::size_t max_bytes,
                                           std::string* error);

// True when nothing exists at `path`; false for anything else, errors included (a read then
// reports those).
bool IsMissingFile(const std::string& path);

// What a command names: the command itself when it has a slash, else the first executable regular
// file of that name on $PATH (as execvp and Go's exec.LookPath search: an empty entry is the
// current folder; without $PATH, /bin:/usr/bin). nullopt when there is none.
std::optional<std::string> FindExecutable(const std::string& command);

}  // namespace eoc
