// A child process for tests: started with posix_spawn, its stdout (and stderr, if asked) read line
// by line as it comes, each line timed; SIGKILLed and reaped by the destructor if still running,
// so that no test leaves one behind, also when it fails. Under a control plane's tests
// (EOC_KUBE_ENV set) the whole output of the project's own programs (eoc-*) is kept in the
// plane's child-logs/ when it is destroyed, for tests/scripts/no_secrets_in_logs.sh, and a test
// that makes a secret (a token) records it there with RecordSecret.
//
//   eoc::testing::ChildProcess p({"/path/to/eoc-controller", "--kubeconfig", kc});
//   auto at = p.WaitFor("LEADING x", std::chrono::seconds(30));   // nullopt on timeout
//   p.Signal(SIGTERM);
//   int status = p.Wait();
//
//   eoc::testing::RunResult r = eoc::testing::RunToExit({"/bin/sh", "-c", "helm version"});
//   EXPECT_TRUE(r.ok) << r.output;
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace eoc::testing {

// Records `secret` (a token, a key) that a test made, so that the check of every child's log for
// secrets looks for it too. Does nothing outside a control plane's tests.
void RecordSecret(const std::string& secret);

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;
  struct Line {
    std::string text;
    Clock::time_point at;
  };

  // argv[0] is the program's path. Throws std::runtime_error when it cannot be started.
  explicit ChildProcess(const std::vector<std::string>& argv, bool merge_stderr = false);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&&) = delete;
  ChildProcess& operator=(ChildProcess&&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal) const;
  // Reaps the process and returns its status as waitpid gives it.
  int Wait();
  // Waits up to `limit` for the process to exit; its status, or nullopt if it still runs.
  std::optional<int> WaitFor(std::chrono::milliseconds limit);

  // When the first line for which `match` is true was read, waiting up to `limit` for it.
  std::optional<Clock::time_point> WaitForLine(const std::function<bool(const std::string&)>& match,
                                               Clock::duration limit);
  // The same for a line equal to `text`.
  std::optional<Clock::time_point> WaitForLine(const std::string& text, Clock::duration limit);
  int Count(const std::string& text) const;
  // Everything read so far, each line indented, for failure messages.
  std::string Output() const;

 private:
  void Read(int fd);

  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string program_;  // argv[0]
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Line> lines_;  // guarded by mu_
  std::thread reader_;
};

// A command run to its end: whether it exited 0 within the limit, and what it wrote (stdout and
// stderr, each line indented, as ChildProcess::Output()).
struct RunResult {
  bool ok = false;
  std::string output;
};
RunResult RunToExit(const std::vector<std::string>& argv,
                    std::chrono::milliseconds limit = std::chrono::minutes(2));

}  // namespace eoc::testing
