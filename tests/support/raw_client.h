// A deliberately simple HTTP client over a raw TCP socket to loopback, for tests of servers: it
// sends exactly the bytes a test gives it (well-formed or not), reads one response at a time, and
// can tell when the server has closed the connection. Every wait has a deadline, so a broken server
// fails the test instead of hanging it. TlsClient (tls_client.h) is the same over TLS.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace eoc::testing {

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  std::string header(const std::string& lower_name) const {
    const auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
  bool has_header(const std::string& lower_name) const { return headers.contains(lower_name); }
};

class RawClient {
 public:
  // A bound on every wait: far above anything a working server needs, only there so that a broken
  // one fails the test rather than hangs it.
  static constexpr std::chrono::milliseconds kPatience{10'000};

  explicit RawClient(std::uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
    }
  }
  virtual ~RawClient() { close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  RawClient(RawClient&&) = delete;
  RawClient& operator=(RawClient&&) = delete;

  // False when the server has closed or reset the connection.
  bool Send(std::string_view bytes) const {
    while (!bytes.empty()) {
      const ssize_t n = WriteSome(bytes);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // One response: status line, headers, and a Content-Length body (none for HEAD, 1xx, 204, 304).
  // nullopt when the connection closes or kPatience passes first, or it is not HTTP.
  std::optional<RawResponse> ReadResponse(bool head = false) {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    std::size_t end = 0;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    RawResponse response;
    const std::string head_text = buffer_.substr(0, end + 2);
    buffer_.erase(0, end + 4);
    if (!head_text.starts_with("HTTP/1.") || head_text.size() < 12) return std::nullopt;
    response.status = std::stoi(head_text.substr(9, 3));
    for (std::size_t pos = head_text.find("\r\n") + 2; pos < head_text.size();) {
      const std::size_t eol = head_text.find("\r\n", pos);
      const std::string line = head_text.substr(pos, eol - pos);
      pos = eol + 2;
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos) return std::nullopt;
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      const std::size_t value_start = line.find_first_not_of(' ', colon + 1);
      response.headers[name] = value_start == std::string::npos ? "" : line.substr(value_start);
    }
    const bool bodiless =
        head || response.status < 200 || response.status == 204 || response.status == 304;
    const std::size_t length =
        bodiless || !response.has_header("content-length")
            ? 0
            : static_cast<std::size_t>(std::stoull(response.header("content-length")));
    while (buffer_.size() < length) {
      if (!Fill(deadline)) return std::nullopt;
    }
    response.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return response;
  }

  // True when the server closes (or resets) the connection within kPatience; what it sends before
  // that is dropped.
  bool WaitForClose() {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    for (;;) {
      buffer_.clear();
      const int result = ReadSome(deadline);
      if (result == kClosed) return true;
      if (result == kTimedOut) return false;
    }
  }

  // Whatever has arrived and not been read as a response yet.
  const std::string& pending() const { return buffer_; }

 protected:
  int fd() const { return fd_; }

  // The transport (plain here; TLS in TlsClient). Writes some of `bytes`: how many, or 0 or less
  // when the connection is gone.
  virtual ssize_t WriteSome(std::string_view bytes) const {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  // Bytes it holds already read from the socket, so that it need not wait for the socket.
  virtual bool HasBuffered() const { return false; }
  // Reads what has arrived into `into`: how many bytes (0: nothing for the caller yet), or nullopt
  // at the end of the connection or an error.
  virtual std::optional<std::size_t> ReadSomeInto(std::span<char> into) {
    const ssize_t n = recv(fd_, into.data(), into.size(), 0);
    if (n <= 0) return std::nullopt;  // EOF, or a reset
    return static_cast<std::size_t>(n);
  }

 private:
  static constexpr int kData = 1;
  static constexpr int kClosed = 0;
  static constexpr int kTimedOut = -1;

  bool Fill(std::chrono::steady_clock::time_point deadline) { return ReadSome(deadline) == kData; }

  int ReadSome(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return kTimedOut;
    if (!HasBuffered()) {
      pollfd pfd{.fd = fd_, .events = POLLIN, .revents = 0};
      const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
      if (ready == 0) return kTimedOut;
      if (ready < 0) return errno == EINTR ? kData : kClosed;
    }
    std::array<char, 16384> chunk{};
    const std::optional<std::size_t> n = ReadSomeInto(chunk);
    if (!n) return kClosed;
    buffer_.append(chunk.data(), *n);
    return kData;
  }

  int fd_ = -1;
  std::string buffer_;
};

}  // namespace eoc::testing
