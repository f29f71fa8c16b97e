#include "child_process.h"

#include <fcntl.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): kill
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

extern char** environ;  // NOLINT(readability-redundant-declaration): posix_spawn's environment

namespace eoc::testing {

ChildProcess::ChildProcess(const std::vector<std::string>& argv, bool merge_stderr) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess: no program");
  program_ = argv[0];
  std::array<int, 2> fds{};
  if (pipe2(fds.data(), O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  if (merge_stderr) posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  // The child starts with the default signal mask, whatever the test's threads block.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  cargs.reserve(args.size() + 1);
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  const int rc = posix_spawn(&pid_, cargs[0], &actions, &attributes, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error("cannot start " + argv[0]);
  }
  reader_ = std::thread([this, fd = fds[0]] { Read(fd); });
}

namespace {

// The control plane's child-logs/ folder (created), or "" outside a control plane's tests.
std::string ChildLogDir() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): nothing in the tests sets the environment
  const char* env = std::getenv("EOC_KUBE_ENV");
  if (env == nullptr || *env == '\0') return "";
  const std::filesystem::path dir = std::filesystem::path(env).parent_path() / "child-logs";
  std::error_code ignored;
  std::filesystem::create_directories(dir / "secrets", ignored);
  return dir.string();
}

std::atomic<int> secrets_recorded{0};

}  // namespace

void RecordSecret(const std::string& secret) {
  const std::string dir = ChildLogDir();
  if (dir.empty() || secret.empty()) return;
  std::ofstream(dir + "/secrets/" + std::to_string(getpid()) + "-" +
                std::to_string(secrets_recorded++))
      << secret << "\n";
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    Signal(SIGKILL);
    Wait();
  }
  if (reader_.joinable()) reader_.join();
  // The project's own programs' (eoc-controller, eoc-sim), not the tools' (kubectl, helm).
  const std::string name = std::filesystem::path(program_).filename().string();
  if (const std::string dir = name.starts_with("eoc-") ? ChildLogDir() : ""; !dir.empty()) {
    std::ofstream log(dir + "/" + name + "." + std::to_string(pid_) + ".log");
    const std::lock_guard lock(mu_);
    for (const auto& line : lines_) log << line.text << "\n";
  }
}

void ChildProcess::Signal(int signal) const {
  if (!reaped_) kill(pid_, signal);
}

int ChildProcess::Wait() {
  int status = 0;
  waitpid(pid_, &status, 0);
  reaped_ = true;
  // The process is gone: read what it wrote to the end, so that Output() has all of it.
  if (reader_.joinable()) reader_.join();
  return status;
}

std::optional<int> ChildProcess::WaitFor(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      if (reader_.joinable()) reader_.join();
      return status;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::optional<ChildProcess::Clock::time_point> ChildProcess::WaitForLine(
    const std::function<bool(const std::string&)>& match, Clock::duration limit) {
  std::unique_lock lock(mu_);
  std::optional<Clock::time_point> at;
  cv_.wait_for(lock, limit, [&] {
    const auto it =
        std::find_if(lines_.begin(), lines_.end(), [&](const Line& l) { return match(l.text); });
    if (it != lines_.end()) at = it->at;
    return at.has_value();
  });
  return at;
}

std::optional<ChildProcess::Clock::time_point> ChildProcess::WaitForLine(const std::string& text,
                                                                         Clock::duration limit) {
  return WaitForLine([&text](const std::string& line) { return line == text; }, limit);
}

int ChildProcess::Count(const std::string& text) const {
  const std::lock_guard lock(mu_);
  return static_cast<int>(
      std::count_if(lines_.begin(), lines_.end(), [&](const Line& l) { return l.text == text; }));
}

std::string ChildProcess::Output() const {
  const std::lock_guard lock(mu_);
  std::string out;
  for (const auto& line : lines_) out += "  " + line.text + "\n";
  return out;
}

void ChildProcess::Read(int fd) {
  std::string pending;
  std::array<char, 4096> buffer{};
  for (;;) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n <= 0) break;
    const auto now = Clock::now();
    pending.append(buffer.data(), static_cast<std::size_t>(n));
    std::size_t end = 0;
    while ((end = pending.find('\n')) != std::string::npos) {
      {
        const std::lock_guard lock(mu_);
        lines_.push_back({pending.substr(0, end), now});
      }
      cv_.notify_all();
      pending.erase(0, end + 1);
    }
  }
  close(fd);
}

RunResult RunToExit(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  ChildProcess child(argv, /*merge_stderr=*/true);
  const auto status = child.WaitFor(limit);
  return {.ok = status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0,
          .output = child.Output()};
}

}  // namespace eoc::testing
