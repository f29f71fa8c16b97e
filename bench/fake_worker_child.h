// What the scrape benchmarks share: fake workers served by a child process (so that their CPU is
// not the measured process's), each on a loopback address of its own (127.0.x.y), and the
// measured process's CPU seconds.
//
//   eoc::bench::WorkerChild child(1000, page);  // forks: before any thread of this process starts
//   child.endpoints()                           // "127.0.20.1:PORT", ... (empty: it failed)
//   eoc::bench::CpuSeconds()                    // user + system of this process, all its threads
// The child serves until the WorkerChild is destroyed (or this process exits).
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fake_worker.h"
#include "server/server.h"
#include "telemetry/logging.h"

namespace eoc::bench {

inline double Seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

// User + system CPU seconds: of the whole process (RUSAGE_SELF) or of the calling thread
// (RUSAGE_THREAD).
inline double CpuSeconds(int who = RUSAGE_SELF) {
  rusage u{};
  getrusage(who, &u);
  return Seconds(u.ru_utime) + Seconds(u.ru_stime);
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The loopback address of worker `i`: 250 per 127.0.x.0/24, from 127.0.20.1.
inline std::string WorkerIp(int i) {
  return "127.0." + std::to_string(20 + (i / 250)) + "." + std::to_string(1 + (i % 250));
}

// The child: starts the workers, writes "ip:port" per line and then "ready" to `out`, and serves
// until `in` closes. With a `page`, each worker is a plain server of that page instead of a
// FakeWorker (whose vLLM page shows load i % 17 running, i % 5 waiting, KV use 0.3).
[[noreturn]] inline void ServeWorkers(int count, const std::string& page, int in, int out) {
  telemetry::SetLogLevel(telemetry::LogLevel::kWarn);
  std::vector<std::unique_ptr<testing::FakeWorker>> workers;
  std::vector<std::unique_ptr<server::HttpServer>> servers;
  std::string lines;
  for (int i = 0; i < count; ++i) {
    const std::string ip = WorkerIp(i);
    if (!page.empty()) {
      auto s = std::make_unique<server::HttpServer>(
          server::ServerOptions{.address = ip + ":0", .threads = 1});
      s->Handle("GET", "/metrics",
                [&page](const server::Request&, server::Response& r) { r.body() = page; });
      s->Start();
      lines += ip + ":" + std::to_string(s->port()) + "\n";
      servers.push_back(std::move(s));
      continue;
    }
    auto w = std::make_unique<testing::FakeWorker>(testing::FakeWorkerOptions{
        .address = ip + ":0", .pod_name = "w-" + std::to_string(i), .threads = 1});
    w->Start();
    w->SetLoad({.running = i % 17, .waiting = i % 5, .kv_cache_usage = 0.3});
    lines += w->endpoint() + "\n";
    workers.push_back(std::move(w));
  }
  lines += "ready\n";
  if (write(out, lines.data(), lines.size()) != static_cast<ssize_t>(lines.size())) _exit(1);
  char c = 0;
  while (read(in, &c, 1) > 0) {
  }
  for (auto& w : workers) w->Stop();
  for (auto& s : servers) s->Stop();
  _exit(0);
}

// Forks the child that serves `count` workers (the fake's page, or `page` when not empty) and
// waits until they listen. Construct it before this process starts any thread.
class WorkerChild {
 public:
  WorkerChild(int count, const std::string& page) {
    int to_child[2];
    int from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) return;
    child_ = fork();
    if (child_ == 0) {
      close(to_child[1]);
      close(from_child[0]);
      ServeWorkers(count, page, to_child[0], from_child[1]);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_child_ = to_child[1];
    FILE* f = fdopen(from_child[0], "r");
    char line[128];
    while (f != nullptr && fgets(line, sizeof(line), f) != nullptr) {
      std::string s(line);
      if (!s.empty() && s.back() == '\n') s.pop_back();
      if (s == "ready") break;
      endpoints_.push_back(s);
    }
    if (f != nullptr) fclose(f);
    if (endpoints_.size() != static_cast<std::size_t>(count)) endpoints_.clear();
  }
  // Closes the child's pipe (it stops its workers and exits) and waits for it.
  ~WorkerChild() {
    if (to_child_ >= 0) close(to_child_);
    if (child_ > 0) waitpid(child_, nullptr, 0);
  }
  WorkerChild(const WorkerChild&) = delete;
  WorkerChild& operator=(const WorkerChild&) = delete;
  WorkerChild(WorkerChild&&) = delete;
  WorkerChild& operator=(WorkerChild&&) = delete;

  // Each worker's "ip:port", in order; empty when the workers did not start.
  const std::vector<std::string>& endpoints() const { return endpoints_; }

 private:
  pid_t child_ = -1;
  int to_child_ = -1;
  std::vector<std::string> endpoints_;
};

}  // namespace eoc::bench
