// Internal to the server: one client connection, and what the connections share with the server.
//
// A connection reads a request (headers within header_timeout of its first byte, or of the accept),
// answers it, and waits up to idle_timeout for the next; all of it on the one thread of its
// io_context, so nothing in a connection needs a lock. Its timeouts are a deadline it sets as it
// goes (an atomic store, no timer per operation: re-arming a timer on every read and write cost a
// system call each); the server's sweep closes the connections whose deadline passed. Requests are
// answered one at a time, in order: bytes of pipelined requests stay in the buffer until the answer
// before them is sent. A handler may put its request off (Request::Defer): the connection then
// holds no thread, watches the socket for the client going away (reading what the client sends
// meanwhile into its buffer, up to the buffer's size, past which it closes), and sends the answer
// when the Later gives it. Requests that must be refused (malformed, too large) get their answer
// and then a lingering close: the write side is shut, and what the client still sends is read and
// dropped for a moment, so that closing with unread bytes (which makes the kernel send RST) does
// not destroy the answer before the client reads it.
//
// Over TLS (a StreamConnection on an ssl::stream) the handshake comes first, within
// header_timeout of the accept and counted as reading; a handshake that fails closes the
// connection and is counted, nothing logged above debug. The client's verified certificate is read
// once, after it. A lingering close sends close_notify and reads what comes for the same moment;
// a put-off request's watch reads through TLS without waiting (the socket is non-blocking; a
// record that needs an answer of ours there, as a TLS 1.3 KeyUpdate, may then fail the
// connection). The stream is the class's template parameter, so that plain connections run the
// same code as before, with no indirection per operation.
//
// At max_connections, a new connection takes the place of the one that has waited longest on its
// client: idle between requests, or still sending its request (a busy one, whose answer is being
// made or sent, is never closed for another). Only when every open connection is busy is the new
// one closed.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "server/body_budget.h"
#include "server/http.h"
#include "server/path_table.h"
#include "server/server.h"
#include "server/tls.h"
#include "telemetry/logging.h"

namespace eoc::server::internal {

class Connection;

// Where a connection is, for the choice of which gives way at the cap.
enum class Phase : std::uint8_t {
  kIdle,     // no byte of the next request yet (new, kept alive, or closing)
  kReading,  // the request has begun and is not complete
  kBusy,     // its answer is being made, waited for, or sent
};

// Shared by the server and its connections. Outlives every connection: the server joins its I/O
// threads, whose handlers hold the last references to connections, before destroying it.
class ServerCore {
 public:
  explicit ServerCore(ServerOptions server_options) : options(std::move(server_options)) {}

  const ServerOptions options;
  PathTable paths;
  BodyBudget bodies{options.max_body_bytes_in_flight};
  const telemetry::Logger log{"http-server"};

  enum class Admission { kAdmitted, kFull, kStopping };
  // Counts `connection` as open unless the server is stopping or max_connections are open and
  // none of them can give way (see above); one that gives way is closed.
  Admission Register(const std::shared_ptr<Connection>& connection);
  void Unregister(const Connection* connection);
  std::size_t open_connections() const;
  // Connections closed to make room for new ones, since the start.
  std::uint64_t evicted() const { return evicted_.load(std::memory_order_relaxed); }
  // TLS handshakes that failed, and client certificates refused, since the start.
  std::uint64_t handshake_failures() const {
    return handshake_failures_.load(std::memory_order_relaxed);
  }
  void CountHandshakeFailure() { handshake_failures_.fetch_add(1, std::memory_order_relaxed); }

  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }
  // From now on no connection is admitted and none is kept alive; each open one finishes what it
  // is sending, answers a put-off request with 503, and closes.
  void BeginStop();
  // Closes every connection at once.
  void CloseAll();
  // Closes the connections whose deadline has passed (the server calls it every sweep period).
  void Sweep();

 private:
  std::vector<std::shared_ptr<Connection>> Open();

  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> evicted_{0};
  std::atomic<std::uint64_t> handshake_failures_{0};
  mutable std::mutex mu_;
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> connections_;  // guarded by mu_
};

// A put-off request's state, shared by its Later handles and its connection: whichever of the
// answer and the abandonment comes first wins.
class Pending {
 public:
  explicit Pending(std::weak_ptr<Connection> connection) : connection_(std::move(connection)) {}

  static Later MakeLater(std::shared_ptr<Pending> pending) { return Later(std::move(pending)); }

  // Later::Answer: true if this is the first end of the request.
  bool Answer(std::function<void(Response&)> fill);
  // Later::Retry: true if this is the first end of the request.
  bool Retry();
  // The connection ends the request without an answer: true (and `on_abandon` has run) if it
  // was still waiting.
  bool Abandon(server::Abandon why);
  void SetOnAbandon(std::function<void(server::Abandon)> on_abandon);

 private:
  enum State : int { kWaiting, kAnswered, kAbandoned };
  std::atomic<int> state_{kWaiting};
  std::weak_ptr<Connection> connection_;
  std::function<void(server::Abandon)> on_abandon_;  // set and run on the connection's thread
};

// A connection as the server sees it, whatever its stream: what the cap, the sweep, the stop and a
// put-off request's answer need (none of it on the path of a request that is not put off).
class Connection : public std::enable_shared_from_this<Connection>, public Deferrer {
 public:
  ~Connection() override;  // unregisters it
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&&) = delete;
  Connection& operator=(Connection&&) = delete;

  // All may be called from any thread; the work happens on the connection's thread.
  virtual void Start() = 0;
  virtual void Close() = 0;
  virtual void CloseIfExpired() = 0;  // ServerCore::Sweep's part
  virtual void Shutdown() = 0;        // ServerCore::BeginStop's part
  // A put-off request's answer (Pending::Answer).
  virtual void Deliver(std::function<void(Response&)> fill) = 0;
  // A put-off request handed to its handler again (Pending::Retry).
  virtual void Redispatch() = 0;

  // For the choice at the cap; read from any thread.
  Phase phase() const { return phase_.load(std::memory_order_relaxed); }
  std::int64_t phase_since() const { return phase_since_.load(std::memory_order_relaxed); }
  // When the connection times out (steady_clock ticks), for the sweep; read from any thread.
  std::int64_t deadline() const { return deadline_.load(std::memory_order_relaxed); }

 protected:
  // In `phase` since now, with header_timeout from now (the accept).
  Connection(ServerCore& core, Phase phase);

  void SetPhase(Phase phase);
  void ExpireIn(std::chrono::milliseconds timeout);
  void ExpireNever();

  ServerCore& core_;

 private:
  std::atomic<Phase> phase_;
  std::atomic<std::int64_t> phase_since_{0};
  std::atomic<std::int64_t> deadline_{0};
};

// A connection on `Stream`: a tcp::socket (plain HTTP) or an ssl::stream over one (HTTPS). Both
// are instantiated in connection.cc.
template <typename Stream>
class StreamConnection final : public Connection {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, boost::asio::ip::tcp::socket>;

  // `context`: over TLS, that of the server's files at the accept; nullptr for plain HTTP.
  StreamConnection(boost::asio::ip::tcp::socket socket, ServerCore& core,
                   std::shared_ptr<TlsContext> context);
  ~StreamConnection() override;
  StreamConnection(const StreamConnection&) = delete;
  StreamConnection& operator=(const StreamConnection&) = delete;
  StreamConnection(StreamConnection&&) = delete;
  StreamConnection& operator=(StreamConnection&&) = delete;

  void Start() override;
  void Close() override;
  void CloseIfExpired() override;
  void Shutdown() override;
  void Deliver(std::function<void(Response&)> fill) override;
  void Redispatch() override;
  Later Defer() override;  // Request::Defer, on its thread while the handler runs

 private:
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  std::shared_ptr<StreamConnection> Self() {
    return std::static_pointer_cast<StreamConnection>(shared_from_this());
  }
  static Stream MakeStream(boost::asio::ip::tcp::socket socket, TlsContext* context);
  boost::asio::ip::tcp::socket& Socket();  // the stream's, or under its TLS
  void CloseSocket();
  void OnHandshake(boost::beast::error_code ec);
  void WaitForRequest(std::chrono::milliseconds timeout);
  void ReadHeader();
  void OnHeader(boost::beast::error_code ec);
  void ReadBody();
  // Reads a Content-Length body a piece at a time, taking memory (and budget) as bytes come.
  void ReadBodyBytes();
  // Keeps `data` as the next bytes of the body (or counts them, when the route discards it);
  // false when the budget cannot hold them.
  bool KeepBodyBytes(std::string_view data);
  // Makes room for `capacity` bytes of body, copying what is held; false when the budget cannot.
  bool ReserveBody(std::size_t capacity);
  void FreeBody();
  void OnBody(boost::beast::error_code ec);
  void Shed();
  void OnReadError(boost::beast::error_code ec, bool header_done);
  void Dispatch();
  void WatchWhileDeferred();
  // The watch's end: the client is gone (or sent more than buffer_ holds).
  void OnClientGone();
  // Reads what has arrived behind a put-off request into buffer_; false when the client is gone
  // (end of stream, an error) or has sent more than buffer_ holds.
  bool ReadAheadWhileDeferred();
  void Send();
  void OnSent(boost::beast::error_code ec, bool keep_alive);
  void Refuse(int status, std::string_view message, std::string_view retry_after = {});
  void LingerThenClose();
  void Drain();

  std::shared_ptr<TlsContext> context_;  // TLS only: what stream_ was made with
  Stream stream_;
  std::optional<PeerCertificate> peer_;  // TLS only: the client's, read after the handshake
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::vector<Header> headers_;  // views into parser_'s message, for Request; reused
  // The body is read into body_ as it arrives (Content-Length or chunked alike), its capacity
  // taken from the server's BodyBudget, and reused by the next request while it is small enough
  // and the budget has room (see OnSent); body_view_ is the request's.
  std::unique_ptr<char[]> body_;  // NOLINT(*-avoid-c-arrays): uninitialised memory
  std::size_t body_capacity_ = 0;
  std::size_t body_size_ = 0;      // bytes of this request's body read (or dropped) so far
  std::size_t body_expected_ = 0;  // its Content-Length
  bool discard_body_ = false;      // its route drops it (BodyUse::kDiscard)
  bool shed_ = false;              // the budget could not hold it
  std::string_view body_view_;
  // A chunk of a chunked body, as Beast's parser hands it over (it keeps a reference to this).
  std::size_t OnChunkBody(std::string_view data, boost::beast::error_code& ec);
  std::function<std::size_t(std::uint64_t, boost::beast::string_view, boost::beast::error_code&)>
      chunk_body_ = [this](std::uint64_t /*remain*/, boost::beast::string_view data,
                           boost::beast::error_code& ec) {
        return OnChunkBody({data.data(), data.size()}, ec);
      };
  Response response_;  // reused: see http.h
  std::string out_;    // the serialized response; reused
  std::array<char, 4096> discard_{};
  std::size_t drained_ = 0;
  // The request being answered: how its answer is framed.
  bool keep_alive_ = true;
  bool omit_body_ = false;
  bool http10_ = false;
  std::shared_ptr<Pending> pending_;  // while a request is put off
  std::uint64_t watch_ = 0;           // numbers the watches of put-off requests
  int attempt_ = 0;                   // the request's handlings before this one (Redispatch)
};

using PlainConnection = StreamConnection<boost::asio::ip::tcp::socket>;
using TlsConnection = StreamConnection<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>>;

}  // namespace eoc::server::internal
