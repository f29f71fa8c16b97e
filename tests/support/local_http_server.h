// An HTTP server on 127.0.0.1 for client tests (the kube transport, the scrape fetchers), a thread
// per connection: each handler writes whatever raw bytes (well-formed or not) the test needs, and
// may hold the connection open until the server stops.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace eoc::testing {

class LocalHttpServer {
 public:
  // Called once per request with the connection and the request's head (up to the blank line).
  using Handler = std::function<void(LocalHttpServer& server, int fd, const std::string& head)>;

  explicit LocalHttpServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listen_fd_, 16) != 0) {
      throw std::runtime_error("LocalHttpServer: cannot listen on 127.0.0.1");
    }
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }

  ~LocalHttpServer() {
    stopping_ = true;
    thread_.join();
    for (auto& t : connections_) t.join();
    close(listen_fd_);
  }
  LocalHttpServer(const LocalHttpServer&) = delete;
  LocalHttpServer& operator=(const LocalHttpServer&) = delete;
  LocalHttpServer(LocalHttpServer&&) = delete;
  LocalHttpServer& operator=(LocalHttpServer&&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool stopping() const { return stopping_; }
  // Holds the connection open, silent, until the server stops.
  void HoldUntilStopped() const {
    while (!stopping_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  static void Write(int fd, const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }
  static std::string Chunk(const std::string& data) {
    char size[32];
    snprintf(size, sizeof(size), "%zx\r\n", data.size());
    return size + data + "\r\n";
  }
  // Every request's head, in arrival order.
  std::vector<std::string> heads() const {
    const std::lock_guard lock(mu_);
    return heads_;
  }

 private:
  void Run() {
    while (!stopping_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      connections_.emplace_back([this, fd] {
        Serve(fd);
        close(fd);
      });
    }
  }

  void Serve(int fd) {
    std::string buf;
    while (!stopping_) {
      const auto end = buf.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::string head = buf.substr(0, end);
        buf.erase(0, end + 4);
        const auto cl = head.find("Content-Length: ");
        std::size_t body = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
        while (buf.size() < body && ReadMore(fd, buf)) {
        }
        buf.erase(0, std::min(body, buf.size()));
        {
          const std::lock_guard lock(mu_);
          heads_.push_back(head);
        }
        handler_(*this, fd, head);
        continue;  // keep-alive: the client may send another request
      }
      if (!ReadMore(fd, buf)) return;
    }
  }

  bool ReadMore(int fd, std::string& buf) const {
    for (;;) {
      if (stopping_) return false;
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 20) == 0) continue;
      char tmp[4096];
      const ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<std::size_t>(n));
      return true;
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::vector<std::thread> connections_;  // touched by the accepting thread only
  mutable std::mutex mu_;
  std::vector<std::string> heads_;
};

}  // namespace eoc::testing
