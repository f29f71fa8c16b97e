#include "kube/exec_plugin.h"

#include <fcntl.h>
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
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "common/bounded_json.h"
#include "common/files.h"
#include "common/rfc3339.h"
#include "common/text.h"
#include "kube/json_limits.h"

namespace eoc::kube {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// How much of a failing plugin's stderr goes into the error: the end, where the reason usually is.
constexpr std::size_t kStderrTailBytes = 4096;
constexpr std::size_t kReadChunkBytes = std::size_t{64} << 10;
// The search path when PATH is unset, as execvp uses (confstr(_CS_PATH)).

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
      // Real time on purpose, not a Wakeup on an injected Clock: no one stops this wait (it is
      // not a loop's sleep but a bounded wait on a real child process, at most limits.timeout),
      // and only the real clock tells when a real process has had its time.
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

ExecResult ParseExecCredential(const ExecConfig& exec, const std::string& text,
                               std::size_t max_bytes) {
  std::string error;  // says where, never what: the text around it could be part of a secret
  std::optional<Json> parsed =
      ParseBoundedJson(text, {.max_depth = kMaxApiJsonDepth, .max_bytes = max_bytes}, error);
  if (!parsed) Fail(exec, "its output: " + error);
  const Json& doc = *parsed;
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

}  // namespace

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
  return ParseExecCredential(exec, output.out, limits.max_output_bytes);
}

}  // namespace eoc::kube
