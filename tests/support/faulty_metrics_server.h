// A metrics endpoint that misbehaves on purpose, for the scrape tests: on its own ip:port it reads
// each request's head and then, by fault, holds the connection silent (hang), sends a page's
// headers and then one byte of its body a second (trickle), announces and sends 10 MB (huge), or
// answers 200 with a body that is not the Prometheus text format (garbage). A FakeWorker whose pod
// asks for a fault (fake.eoc.dev/metrics-fault) serves this instead of its HTTP server.
//
//   eoc::testing::FaultyMetricsServer server("127.0.10.7:8000", MetricsFault::kTrickle);
//   server.Start();                     // throws std::runtime_error if it cannot listen
//   ... a scraper's GET /metrics runs into its deadline ...
//   server.Stop();                      // or the destructor: every connection ends at once
//
// Bounded: at most kMaxConnections at once (more are closed as they come); each ends when the
// peer closes it, or at Stop().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace eoc::testing {

enum class MetricsFault : std::uint8_t { kNone, kHang, kTrickle, kHuge, kGarbage };
// "hang", "trickle", "huge", "garbage" (and "none"); nullopt for anything else.
std::optional<MetricsFault> ParseMetricsFault(std::string_view text);

class FaultyMetricsServer {
 public:
  static constexpr std::size_t kMaxConnections = 32;
  static constexpr std::size_t kHugeBytes = std::size_t{10} << 20;

  FaultyMetricsServer(std::string address, MetricsFault fault);
  ~FaultyMetricsServer();  // Stop()s
  FaultyMetricsServer(const FaultyMetricsServer&) = delete;
  FaultyMetricsServer& operator=(const FaultyMetricsServer&) = delete;
  FaultyMetricsServer(FaultyMetricsServer&&) = delete;
  FaultyMetricsServer& operator=(FaultyMetricsServer&&) = delete;

  // Listens on the address ("ipv4:port"; port 0 picks one). Throws std::runtime_error.
  void Start();
  void Stop();
  std::uint16_t port() const { return port_; }
  // Requests whose head was read.
  std::uint64_t requests() const { return requests_.load(); }

 private:
  struct Connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void Accept();
  void Serve(int fd);
  // Sleeps `ms` unless stopped; false when stopped.
  bool Pause(int ms) const;

  const std::string address_;
  const MetricsFault fault_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> requests_{0};
  std::thread acceptor_;
  std::list<Connection> connections_;  // the acceptor's thread only (and Stop, after it)
};

}  // namespace eoc::testing
