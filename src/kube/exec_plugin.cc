#include "kube/exec_plugin.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace eoc::kube {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// How much of a failing plugin's stderr goes into the error: the end, where the reason usually is.
constexpr std::size_t kStderrTailBytes = 4096;
constexpr std::size_t kReadChunkBytes = std::size_t{64} << 10;
// The search path when PATH is unset, as execvp uses (confstr(_CS_PATH)).
constexpr const char* kDefaultSearchPath = "/bin:/usr/bin";

std::string ErrnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

[[noreturn]] void Fail(const ExecConfig& exec, std::string_view what) {
  throw CredentialError("exec plugin \"" + exec.command + "\": " + std::string(what));
}

void CheckSpawnSetup(const ExecConfig& exec, int rc) {
  if (rc != 0) Fail(exec, "cannot prepare to run it: " + ErrnoText(rc));
}

[[noreturn]] void FailTimeout(const ExecConfig& exec, const ExecLimits& limits) {
  const std::int64_t ms = limits.timeout.count();
  Fail(exec, "timed out after " +
                 (ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms") +
                 "; killed it");
}

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

struct Pipe {
  Fd read;
  Fd write;
};

// Close-on-exec from birth, so that a fork in another thread cannot inherit the write end and
// keep our read end from ever seeing end-of-file.
Pipe MakePipe(const ExecConfig& exec) {
  std::array<int, 2> fds{-1, -1};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) Fail(exec, "cannot create a pipe: " + ErrnoText(errno));
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

// A running plugin, leader of its own process group. Destroying it before WaitUntil() has reaped
// it kills the whole group (a script's own children too) and reaps the leader, so no path out of
// RunExecPlugin (timeout, oversized output, an exception) leaves a zombie or a stray process.
class ChildProcess {
 public:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);  // in case the plugin moved itself to another group
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }

  // The wait status once the plugin exits, or nullopt when `deadline` passes first.
  std::optional<int> WaitUntil(const ExecConfig& exec, SteadyClock::time_point deadline) {
    // Called once the plugin has closed its output, when it is normally exiting already: a short
    // poll costs less than a SIGCHLD handler, which would be process-wide state.
    std::chrono::milliseconds pause{1};
    while (true) {
      int status = 0;
      const pid_t reaped = ::waitpid(pid_, &status, WNOHANG);
      if (reaped == pid_) {
        pid_ = -1;
        return status;
      }
      if (reaped < 0 && errno != EINTR) {
        const int err = errno;
        pid_ = -1;  // gone (e.g. SIGCHLD ignored, so the kernel reaped it): nothing to kill
        Fail(exec, "lost track of the process: " + ErrnoText(err));
      }
      if (SteadyClock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
  }

 private:
  pid_t pid_;
};

class SpawnFileActions {
 public:
  SpawnFileActions() { posix_spawn_file_actions_init(&actions_); }
  SpawnFileActions(const SpawnFileActions&) = delete;
  SpawnFileActions& operator=(const SpawnFileActions&) = delete;
  ~SpawnFileActions() { posix_spawn_file_actions_destroy(&actions_); }
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_{};
};

class SpawnAttributes {
 public:
  SpawnAttributes() { posix_spawnattr_init(&attributes_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  ~SpawnAttributes() { posix_spawnattr_destroy(&attributes_); }
  posix_spawnattr_t* get() { return &attributes_; }

 private:
  posix_spawnattr_t attributes_{};
};

std::string Base64Encode(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// KUBERNETES_EXEC_INFO, as client-go writes it (empty cluster fields omitted, as its omitempty).
std::string ExecInfoJson(const ExecConfig& exec, const ExecClusterInfo& cluster) {
  Json spec = {{"interactive", false}};
  if (exec.provide_cluster_info) {
    Json info = {{"server", cluster.server}};
    if (!cluster.tls_server_name.empty()) info["tls-server-name"] = cluster.tls_server_name;
    if (cluster.insecure_skip_tls_verify) info["insecure-skip-tls-verify"] = true;
    if (!cluster.ca_pem.empty()) info["certificate-authority-data"] = Base64Encode(cluster.ca_pem);
    spec["cluster"] = std::move(info);
  }
  const Json doc = {{"apiVersion", exec.api_version}, {"kind", "ExecCredential"}, {"spec", spec}};
  return doc.dump();
}

// Our environment with the configured variables and KUBERNETES_EXEC_INFO set over it; where the
// configuration names a variable twice, the last wins (as Go's exec does).
std::vector<std::string> PluginEnvironment(const ExecConfig& exec, const ExecClusterInfo& cluster) {
  std::vector<std::pair<std::string, std::string>> overrides = exec.env;
  overrides.emplace_back("KUBERNETES_EXEC_INFO", ExecInfoJson(exec, cluster));
  const auto overridden_after = [&](std::string_view name, std::size_t first) {
    return std::any_of(overrides.begin() + static_cast<std::ptrdiff_t>(first), overrides.end(),
                       [&](const auto& var) { return var.first == name; });
  };
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view var(*entry);
    if (!overridden_after(var.substr(0, var.find('=')), 0)) env.emplace_back(var);
  }
  for (std::size_t i = 0; i < overrides.size(); ++i) {
    if (!overridden_after(overrides[i].first, i + 1)) {
      env.push_back(overrides[i].first + "=" + overrides[i].second);
    }
  }
  return env;
}

// argv/envp for posix_spawn: pointers into `strings`, then a null.
std::vector<char*> CStringArray(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// What to execute: the command itself when it has a slash, else the first executable of that name
// on PATH (as execvp and Go's exec.LookPath search; an empty PATH entry is the current folder).
std::optional<std::string> FindExecutable(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  // Read once per run; nothing in this process changes PATH while it runs.
  const char* path_env = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  for (const std::string& dir :
       SplitPathList(path_env != nullptr ? path_env : kDefaultSearchPath)) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + command;
    if (IsExecutableFile(candidate)) return candidate;
  }
  return std::nullopt;
}

[[noreturn]] void FailNotFound(const ExecConfig& exec) {
  std::string what = "executable not found";
  if (exec.command.find('/') == std::string::npos) what += " on PATH";
  if (!exec.install_hint.empty()) what += ". " + exec.install_hint;
  Fail(exec, what);
}

// Starts the plugin with stdin on /dev/null and stdout/stderr on the given pipes, in a process
// group of its own, with default signal handling (we may ignore SIGPIPE; it should not), and with
// no descriptor of ours other than those three.
pid_t Spawn(const ExecConfig& exec, const std::string& path, std::vector<std::string> env,
            int stdout_fd, int stderr_fd) {
  std::vector<std::string> args{exec.command};
  args.insert(args.end(), exec.args.begin(), exec.args.end());
  const std::vector<char*> argv = CStringArray(args);
  const std::vector<char*> envp = CStringArray(env);

  SpawnFileActions actions;
  CheckSpawnSetup(exec, posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null",
                                                         O_RDONLY, 0));
  CheckSpawnSetup(exec, posix_spawn_file_actions_adddup2(actions.get(), stdout_fd, STDOUT_FILENO));
  CheckSpawnSetup(exec, posix_spawn_file_actions_adddup2(actions.get(), stderr_fd, STDERR_FILENO));
  CheckSpawnSetup(exec, posix_spawn_file_actions_addclosefrom_np(actions.get(), STDERR_FILENO + 1));

  SpawnAttributes attributes;
  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t all_signals;
  sigfillset(&all_signals);
  CheckSpawnSetup(exec, posix_spawnattr_setsigmask(attributes.get(), &no_signals));
  CheckSpawnSetup(exec, posix_spawnattr_setsigdefault(attributes.get(), &all_signals));
  CheckSpawnSetup(exec, posix_spawnattr_setpgroup(attributes.get(), 0));
  CheckSpawnSetup(exec, posix_spawnattr_setflags(attributes.get(), POSIX_SPAWN_SETSIGMASK |
                                                                       POSIX_SPAWN_SETSIGDEF |
                                                                       POSIX_SPAWN_SETPGROUP));

  pid_t pid = -1;
  // glibc reports a failed exec here (not as exit status 127), so "not found" is told apart.
  const int rc =
      posix_spawn(&pid, path.c_str(), actions.get(), attributes.get(), argv.data(), envp.data());
  // ENOENT for a file that exists means its #! interpreter is missing: not "not found".
  if (rc == ENOENT && ::access(path.c_str(), F_OK) != 0) FailNotFound(exec);
  if (rc != 0) Fail(exec, "cannot run " + path + ": " + ErrnoText(rc));
  return pid;
}

struct PluginOutput {
  std::string out;
  std::string err;  // the tail only
  bool err_truncated = false;
};

void KeepTail(PluginOutput* output) {
  if (output->err.size() <= kStderrTailBytes) return;
  output->err.erase(0, output->err.size() - kStderrTailBytes);
  output->err_truncated = true;
}

// Reads stdout and stderr together until the plugin closes both, so that neither pipe can fill
// and stall it. Throws when `deadline` passes or stdout grows past the limit.
PluginOutput Collect(const ExecConfig& exec, const Fd& out, const Fd& err, const ExecLimits& limits,
                     SteadyClock::time_point deadline) {
  PluginOutput output;
  std::array<pollfd, 2> fds{{{out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}}};
  std::array<std::string*, 2> sinks{&output.out, &output.err};
  std::vector<char> buffer(kReadChunkBytes);
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) FailTimeout(exec, limits);
    const int ready = ::poll(fds.data(), fds.size(),
                             static_cast<int>(std::min<std::int64_t>(left.count(), INT_MAX)));
    if (ready < 0 && errno != EINTR) Fail(exec, "poll: " + ErrnoText(errno));
    for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;  // end of file (or a broken pipe): poll() skips negative descriptors
        continue;
      }
      sinks[i]->append(buffer.data(), static_cast<std::size_t>(n));
    }
    KeepTail(&output);
    if (output.out.size() > limits.max_output_bytes) {
      Fail(exec, "printed more than " + std::to_string(limits.max_output_bytes) +
                     " bytes on stdout; killed it");
    }
  }
  return output;
}

void CheckExitStatus(const ExecConfig& exec, int status, const PluginOutput& output) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string what = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                       : "was killed by signal " + std::to_string(WTERMSIG(status));
  const std::string_view tail = TrimWhitespace(output.err);
  what += tail.empty()
              ? std::string(", printing nothing on stderr")
              : "; stderr: " + std::string(output.err_truncated ? "..." : "") + std::string(tail);
  Fail(exec, what);
}

// Runs the plugin to completion, returning its output; throws unless it exits with status 0.
PluginOutput RunToCompletion(const ExecConfig& exec, const std::string& path,
                             const ExecClusterInfo& cluster, const ExecLimits& limits) {
  // Real time, not an injected Clock: this bounds a real process, and tests shorten `limits`.
  const SteadyClock::time_point deadline = SteadyClock::now() + limits.timeout;
  Pipe out = MakePipe(exec);
  Pipe err = MakePipe(exec);
  ChildProcess child(
      Spawn(exec, path, PluginEnvironment(exec, cluster), out.write.get(), err.write.get()));
  // Only the plugin may hold the write ends now, so end-of-file means it is done with them.
  out.write.Reset();
  err.write.Reset();
  PluginOutput output = Collect(exec, out.read, err.read, limits, deadline);
  const std::optional<int> status = child.WaitUntil(exec, deadline);
  if (!status) FailTimeout(exec, limits);
  CheckExitStatus(exec, *status, output);
  return output;
}

// A string member of `object` ("" when absent or null); `path` names it in errors.
std::string StringMember(const ExecConfig& exec, const Json& object, const char* key,
                         const std::string& path) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  if (!it->is_string()) Fail(exec, path + ": expected a string, found " + it->type_name());
  return it->get<std::string>();
}

const Json& StatusOf(const ExecConfig& exec, const Json& doc) {
  const auto it = doc.find("status");
  if (it == doc.end() || it->is_null()) Fail(exec, "status: missing from its ExecCredential");
  if (!it->is_object()) {
    Fail(exec, std::string("status: expected an object, found ") + it->type_name());
  }
  return *it;
}

ExecResult ParseExecCredential(const ExecConfig& exec, const std::string& text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // Only the position: the text around it could be part of a secret.
    Fail(exec, "its output is not valid JSON (error at byte " + std::to_string(e.byte) + " of " +
                   std::to_string(text.size()) + ")");
  }
  if (!doc.is_object()) Fail(exec, "its output is not a JSON object");
  const std::string api_version = StringMember(exec, doc, "apiVersion", "apiVersion");
  if (api_version != exec.api_version) {
    Fail(exec, "apiVersion " + Quoted(api_version) +
                   " in its output does not match the configured " + Quoted(exec.api_version));
  }
  const std::string kind = StringMember(exec, doc, "kind", "kind");
  if (kind != "ExecCredential")
    Fail(exec, "kind " + Quoted(kind) + " in its output is not ExecCredential");

  const Json& status = StatusOf(exec, doc);
  ExecResult result;
  result.token = StringMember(exec, status, "token", "status.token");
  result.client_cert_pem =
      StringMember(exec, status, "clientCertificateData", "status.clientCertificateData");
  result.client_key_pem = StringMember(exec, status, "clientKeyData", "status.clientKeyData");
  if (result.client_cert_pem.empty() != result.client_key_pem.empty()) {
    Fail(exec, result.client_key_pem.empty()
                   ? "status.clientCertificateData given without status.clientKeyData"
                   : "status.clientKeyData given without status.clientCertificateData");
  }
  if (result.token.empty() && result.client_cert_pem.empty()) {
    Fail(exec, "status.token: missing, and no status.clientCertificateData either");
  }
  const std::string expiry =
      StringMember(exec, status, "expirationTimestamp", "status.expirationTimestamp");
  if (!expiry.empty()) {
    result.expiry = ParseRfc3339(expiry);
    if (!result.expiry) {
      Fail(exec, "status.expirationTimestamp " + Quoted(expiry) + " is not an RFC 3339 time");
    }
  }
  return result;
}

// The decimal number in s[pos, pos + n), or nullopt when that is not all digits.
std::optional<int> Digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int value = 0;
  for (const char c : s.substr(pos, n)) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool CharAt(std::string_view s, std::size_t pos, std::string_view any_of) {
  return pos < s.size() && any_of.find(s[pos]) != std::string_view::npos;
}

// ".123456789" at `*pos` (more digits than nanoseconds are read and ignored); zero when absent.
std::optional<std::chrono::nanoseconds> ParseFraction(std::string_view s, std::size_t* pos) {
  if (!CharAt(s, *pos, ".")) return std::chrono::nanoseconds(0);
  const std::size_t start = ++*pos;
  std::int64_t nanos = 0;
  int digits = 0;
  for (; CharAt(s, *pos, "0123456789"); ++*pos) {
    if (digits < 9) {
      nanos = nanos * 10 + (s[*pos] - '0');
      ++digits;
    }
  }
  if (*pos == start) return std::nullopt;
  for (; digits < 9; ++digits) nanos *= 10;
  return std::chrono::nanoseconds(nanos);
}

// "Z", "+hh:mm" or "-hh:mm" at `pos`, which must end `s`: what to add to local time to get UTC.
std::optional<std::chrono::minutes> ParseOffset(std::string_view s, std::size_t pos) {
  if (CharAt(s, pos, "Zz")) {
    if (pos + 1 != s.size()) return std::nullopt;
    return std::chrono::minutes(0);
  }
  const std::optional<int> hours = Digits(s, pos + 1, 2);
  const std::optional<int> minutes = Digits(s, pos + 4, 2);
  if (!CharAt(s, pos, "+-") || !hours || !CharAt(s, pos + 3, ":") || !minutes || *hours > 23 ||
      *minutes > 59 || pos + 6 != s.size()) {
    return std::nullopt;
  }
  const std::chrono::minutes east = std::chrono::hours(*hours) + std::chrono::minutes(*minutes);
  return s[pos] == '+' ? -east : east;
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS at fixed positions, then the optional fraction and the offset.
  const std::optional<int> year = Digits(text, 0, 4);
  const std::optional<int> month = Digits(text, 5, 2);
  const std::optional<int> day = Digits(text, 8, 2);
  const std::optional<int> hour = Digits(text, 11, 2);
  const std::optional<int> minute = Digits(text, 14, 2);
  const std::optional<int> second = Digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second || !CharAt(text, 4, "-") ||
      !CharAt(text, 7, "-") || !CharAt(text, 10, "Tt") || !CharAt(text, 13, ":") ||
      !CharAt(text, 16, ":") || *hour > 23 || *minute > 59 || *second > 59) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  const std::optional<std::chrono::nanoseconds> fraction = ParseFraction(text, &pos);
  if (!fraction) return std::nullopt;
  const std::optional<std::chrono::minutes> to_utc = ParseOffset(text, pos);
  if (!to_utc) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(*year),
                                         std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok()) return std::nullopt;
  const auto time = std::chrono::sys_days(date) + std::chrono::hours(*hour) +
                    std::chrono::minutes(*minute) + std::chrono::seconds(*second) + *fraction +
                    *to_utc;
  return std::chrono::time_point_cast<std::chrono::system_clock::duration>(time);
}

ExecResult RunExecPlugin(const ExecConfig& exec, const ExecClusterInfo& cluster,
                         const ExecLimits& limits) {
  if (exec.interactive_mode == "Always") {
    Fail(exec,
         "interactiveMode is Always, but this process has no terminal for it; set "
         "interactiveMode to IfAvailable or Never");
  }
  const std::optional<std::string> path = FindExecutable(exec.command);
  if (!path) FailNotFound(exec);
  const PluginOutput output = RunToCompletion(exec, *path, cluster, limits);
  return ParseExecCredential(exec, output.out);
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

std::optional<std::string> ReadTokenFile(const std::string& path, std::string* error) {
  std::optional<std::string> text = ReadFileLimited(path, kMaxTokenFileBytes, error);
  if (!text) return std::nullopt;
  const std::string_view token = TrimWhitespace(*text);
  if (token.empty()) {
    *error = "the file is empty";
    return std::nullopt;
  }
  return std::string(token);
}

std::string Quoted(std::string_view value) {
  constexpr std::size_t kMaxShown = 100;
  if (value.size() <= kMaxShown) return "\"" + std::string(value) + "\"";
  return "\"" + std::string(value.substr(0, kMaxShown)) + "\"...";
}

std::vector<std::string> SplitPathList(std::string_view list) {
  std::vector<std::string> parts;
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t end = std::min(list.find(':', start), list.size());
    parts.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string_view TrimWhitespace(std::string_view text) {
  constexpr std::string_view kWhitespace = " \t\r\n\v\f";
  const std::size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kWhitespace) - first + 1);
}

}  // namespace eoc::kube
