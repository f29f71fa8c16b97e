// Internal to the server: one client connection, and what the connections share with the server.
//
// A connection reads a request (headers within header_timeout of its first byte, or of the accept),
// answers it, and waits up to idle_timeout for the next; all of it on the connection's own strand,
// so nothing in a connection needs a lock. Requests that must be refused (malformed, too large) get
// their answer and then a lingering close: the write side is shut, and what the client still sends
// is read and dropped for a moment, so that closing with unread bytes (which makes the kernel send
// RST) does not destroy the answer before the client reads it.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/http.h"
#include "server/path_table.h"
#include "server/server.h"
#include "telemetry/logging.h"

namespace eoc::server::internal {

class Connection;

// Shared by the server and its connections. Outlives every connection: the server joins its I/O
// threads, whose handlers hold the last references to connections, before destroying it.
class ServerCore {
 public:
  explicit ServerCore(ServerOptions server_options) : options(std::move(server_options)) {}

  const ServerOptions options;
  PathTable paths;
  const telemetry::Logger log{"http-server"};

  enum class Admission { kAdmitted, kFull, kStopping };
  // Counts `connection` as open unless the server is stopping or max_connections are open.
  Admission Register(const std::shared_ptr<Connection>& connection);
  void Unregister(const Connection* connection);
  std::size_t open_connections() const;

  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }
  // From now on no connection is admitted and none is kept alive; the open ones are closed.
  void CloseAll();

 private:
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> connections_;  // guarded by mu_
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(boost::asio::ip::tcp::socket socket, ServerCore& core);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&&) = delete;
  Connection& operator=(Connection&&) = delete;

  // Both may be called from any thread; the work happens on the connection's strand.
  void Start();
  void Close();

 private:
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  void WaitForRequest();
  void ReadHeader();
  void OnHeader(boost::beast::error_code ec);
  void ReadBody();
  void OnBody(boost::beast::error_code ec);
  void OnReadError(boost::beast::error_code ec, bool header_done);
  void Dispatch();
  void Send(bool keep_alive, bool omit_body, bool http10);
  void OnSent(boost::beast::error_code ec, bool keep_alive);
  void Refuse(int status, std::string_view message);
  void LingerThenClose();
  void Drain();

  ServerCore& core_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::vector<Header> headers_;  // views into parser_'s message, for Request; reused
  Response response_;            // reused: see http.h
  std::string out_;              // the serialized response; reused
  std::array<char, 4096> discard_{};
  std::size_t drained_ = 0;
};

}  // namespace eoc::server::internal
