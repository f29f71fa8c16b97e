#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "common/text.h"

namespace eoc {
namespace {

constexpr std::size_t kReadChunkBytes = std::size_t{64} << 10;

}  // namespace

std::string ErrnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

bool IsMissingFile(const std::string& path) {
  std::error_code ec;  // any other error: let the read report it
  return std::filesystem::status(path, ec).type() == std::filesystem::file_type::not_found;
}

std::optional<std::string> ReadFileLimited(const std::string& path, std::size_t max_bytes,
                                           std::string* error) {
  // O_NONBLOCK: opening a FIFO must not hang; it is refused below as not a regular file.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    *error = ErrnoText(errno);
    return std::nullopt;
  }
  const std::string too_large = "larger than " + std::to_string(max_bytes) + " bytes";
  if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
    return std::nullopt;
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    *error = too_large;
    return std::nullopt;
  }
  // Read to end of file rather than st_size bytes, bounded still, as the file may be changing.
  std::string data;
  std::vector<char> buffer(kReadChunkBytes);
  while (data.size() <= max_bytes) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = ErrnoText(errno);
      return std::nullopt;
    }
    if (n == 0) return data;
    data.append(buffer.data(), static_cast<std::size_t>(n));
  }
  *error = too_large;
  return std::nullopt;
}

namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> FindExecutable(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  // Nothing in this process changes PATH while it runs.
  const char* path_env = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  for (const std::string& dir : SplitPathList(path_env != nullptr ? path_env : "/bin:/usr/bin")) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + command;
    if (IsExecutableFile(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace eoc
