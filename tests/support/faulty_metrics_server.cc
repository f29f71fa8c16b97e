#include "faulty_metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "sim/metrics_pages.h"

namespace eoc::testing {
namespace {

// Sends all of `bytes` unless the peer goes away; false then.
bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string Head(std::size_t length) {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
         std::to_string(length) + "\r\nConnection: close\r\n\r\n";
}

}  // namespace

std::optional<MetricsFault> ParseMetricsFault(std::string_view text) {
  if (text == "none") return MetricsFault::kNone;
  if (text == "hang") return MetricsFault::kHang;
  if (text == "trickle") return MetricsFault::kTrickle;
  if (text == "huge") return MetricsFault::kHuge;
  if (text == "garbage") return MetricsFault::kGarbage;
  return std::nullopt;
}

FaultyMetricsServer::FaultyMetricsServer(std::string address, MetricsFault fault)
    : address_(std::move(address)), fault_(fault) {}

FaultyMetricsServer::~FaultyMetricsServer() { Stop(); }

void FaultyMetricsServer::Start() {
  const auto colon = address_.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (colon == std::string::npos ||
      inet_pton(AF_INET, address_.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    throw std::runtime_error("FaultyMetricsServer: not an ipv4:port address: " + address_);
  }
  addr.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address_.substr(colon + 1))));
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    throw std::runtime_error("FaultyMetricsServer: cannot listen on " + address_);
  }
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { Accept(); });
}

void FaultyMetricsServer::Stop() {
  stopping_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  for (Connection& c : connections_) c.thread.join();
  connections_.clear();
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

bool FaultyMetricsServer::Pause(int ms) const {
  for (int waited = 0; waited < ms && !stopping_; waited += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !stopping_;
}

void FaultyMetricsServer::Accept() {
  while (!stopping_) {
    for (auto it = connections_.begin(); it != connections_.end();) {  // reap the finished
      if (it->done->load()) {
        it->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (connections_.size() >= kMaxConnections) {
      close(fd);
      continue;
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    connections_.push_back({std::thread([this, fd, done] {
                              Serve(fd);
                              close(fd);
                              *done = true;
                            }),
                            done});
  }
}

void FaultyMetricsServer::Serve(int fd) {
  // A send that cannot go on (the peer stopped reading) gives up within a second.
  const timeval timeout{.tv_sec = 1, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  // Whether the peer is still there, waiting up to `ms` for it to say anything (or close).
  const auto peer_open = [&](int ms) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return true;
    char byte = 0;
    return recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  };
  std::string head;
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 8192) {
    if (stopping_) return;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    char buf[1024];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    head.append(buf, static_cast<std::size_t>(n));
  }
  ++requests_;
  switch (fault_) {
    case MetricsFault::kNone:
    case MetricsFault::kHang:
      while (!stopping_ && peer_open(20)) {
      }
      return;
    case MetricsFault::kTrickle: {
      const std::string page = sim::RenderMetrics(api::Engine::kVllm, {}, {}, false);
      if (!SendAll(fd, Head(page.size()))) return;
      for (const char c : page) {
        if (!Pause(1000) || !SendAll(fd, std::string_view(&c, 1))) return;
      }
      return;
    }
    case MetricsFault::kHuge: {
      if (!SendAll(fd, Head(kHugeBytes))) return;
      const std::string line(1023, '#');
      for (std::size_t sent = 0; sent < kHugeBytes && !stopping_; sent += 1024) {
        if (!SendAll(fd, line + "\n")) return;
      }
      return;
    }
    case MetricsFault::kGarbage: {
      const std::string body = "<html>this is not a metrics page</html>\n";
      (void)SendAll(fd, Head(body.size()) + body);
      return;
    }
  }
}

}  // namespace eoc::testing
