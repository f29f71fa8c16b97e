// Plain HTTP for tests that talk to a process on loopback (the controller's /metrics, /readyz)
// or at a fake pod's IPv4 address: a free port to give it, and one GET.
//
//   const int port = eoc::testing::FreePort();
//   eoc::testing::HttpAnswer a = eoc::testing::HttpGet(port, "/metrics");  // a.status 0: none
//   eoc::testing::HttpGet("10.231.0.7", 8000, "/metrics").ok_body();     // "" unless a 200
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>

namespace eoc::testing {

// A port nothing listens on right now, and one this process has not handed out before: the
// kernel may give a port it just gave again once the probe socket is closed, and two ports that
// a test asks for in a row (a controller's metrics and pick ports) must differ.
inline int FreePort() {
  static std::mutex mu;
  static std::set<int> given;
  const std::lock_guard<std::mutex> lock(mu);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd);
      return 0;
    }
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    close(fd);
    const int port = ntohs(addr.sin_port);
    if (given.insert(port).second) return port;
  }
  return 0;
}

struct HttpAnswer {
  int status = 0;  // 0: no answer (nothing listens, or no answer within the timeout)
  std::string body;

  bool answered() const { return status != 0; }
  // The body of a 200 answer; "" for any other.
  std::string ok_body() const { return status == 200 ? body : ""; }
};

// One GET on ip:port (IPv4) with Connection: close; connecting, sending and each read are cut
// after 10 s.
inline HttpAnswer HttpGet(const std::string& ip, int port, const std::string& path) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  HttpAnswer answer;
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) return answer;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const timeval timeout{.tv_sec = 10, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));  // connect() too
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return answer;
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string raw;
  char buf[4096];
  ssize_t n = 0;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) raw.append(buf, static_cast<std::size_t>(n));
  close(fd);
  if (raw.rfind("HTTP/1.1 ", 0) != 0) return answer;
  answer.status = std::stoi(raw.substr(9, 3));
  const auto body = raw.find("\r\n\r\n");
  if (body != std::string::npos) answer.body = raw.substr(body + 4);
  return answer;
}

// One GET on 127.0.0.1:port.
inline HttpAnswer HttpGet(int port, const std::string& path) {
  return HttpGet("127.0.0.1", port, path);
}

}  // namespace eoc::testing
