#include "server/connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/optional/optional.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string_view>

#include "server/wire.h"

namespace eoc::server::internal {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using net::ip::tcp;

// How long a refused client gets to read our answer before the connection closes, and how much of
// what it still sends is read and dropped meanwhile (Go's net/http waits 500 ms, too).
constexpr std::chrono::milliseconds kLinger(500);
constexpr std::size_t kMaxDrainBytes = std::size_t{1024} * 1024;
// Read size while waiting for the first byte of the next request on a kept-alive connection.
constexpr std::size_t kFirstRead = 4096;
// Room for one socket read beyond the header limit: the parser enforces the limits, this only
// stops the buffer from growing if it ever did not.
constexpr std::size_t kBufferSlack = std::size_t{64} * 1024;
// Response memory kept for reuse between requests; more is given back after the answer.
constexpr std::size_t kKeptCapacity = std::size_t{64} * 1024;
// Request body memory kept the same way: enough for a long prompt; a larger body's is given back.
constexpr std::size_t kKeptBodyCapacity = std::size_t{256} * 1024;
// A body's memory grows as its bytes come: by at least this much (or double) at each read.
constexpr std::size_t kBodyStep = std::size_t{64} * 1024;
// An answer's body up to this size is sent with its head, in one TLS record (its largest).
constexpr std::size_t kTlsCoalesce = std::size_t{16} * 1024;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

std::string_view View(beast::string_view text) { return {text.data(), text.size()}; }

bool IsHttpError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

std::int64_t SteadyNow() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

}  // namespace

bool Pending::Answer(std::function<void(Response&)> fill) {
  int waiting = kWaiting;
  if (!state_.compare_exchange_strong(waiting, kAnswered, std::memory_order_acq_rel)) return false;
  const std::shared_ptr<Connection> connection = connection_.lock();
  if (connection == nullptr) return false;
  connection->Deliver(std::move(fill));
  return true;
}

bool Pending::Retry() {
  int waiting = kWaiting;
  if (!state_.compare_exchange_strong(waiting, kAnswered, std::memory_order_acq_rel)) return false;
  const std::shared_ptr<Connection> connection = connection_.lock();
  if (connection == nullptr) return false;
  connection->Redispatch();
  return true;
}

bool Pending::Abandon(server::Abandon why) {
  int waiting = kWaiting;
  if (!state_.compare_exchange_strong(waiting, kAbandoned, std::memory_order_acq_rel)) return false;
  if (auto on_abandon = std::move(on_abandon_)) on_abandon(why);
  return true;
}

void Pending::SetOnAbandon(std::function<void(server::Abandon)> on_abandon) {
  on_abandon_ = std::move(on_abandon);
}

ServerCore::Admission ServerCore::Register(const std::shared_ptr<Connection>& connection) {
  std::shared_ptr<Connection> victim;
  {
    const std::lock_guard lock(mu_);
    if (stopping()) return Admission::kStopping;
    if (connections_.size() >= options.max_connections) {
      // The one that has waited longest on its client gives way. O(connections), only at the cap.
      auto chosen = connections_.end();
      for (auto it = connections_.begin(); it != connections_.end(); ++it) {
        const Connection& c = *it->first;  // alive: its destructor's Unregister waits for mu_
        if (c.phase() == Phase::kBusy) continue;
        if (chosen == connections_.end() || c.phase_since() < chosen->first->phase_since()) {
          chosen = it;
        }
      }
      if (chosen == connections_.end()) return Admission::kFull;
      victim = chosen->second.lock();  // null if it is being destroyed: its place is free anyway
      connections_.erase(chosen);
      evicted_.fetch_add(1, std::memory_order_relaxed);
    }
    connections_.emplace(connection.get(), connection);
  }
  if (victim != nullptr) victim->Close();
  return Admission::kAdmitted;
}

void ServerCore::Unregister(const Connection* connection) {
  const std::lock_guard lock(mu_);
  connections_.erase(connection);
}

std::size_t ServerCore::open_connections() const {
  const std::lock_guard lock(mu_);
  return connections_.size();
}

std::vector<std::shared_ptr<Connection>> ServerCore::Open() {
  std::vector<std::shared_ptr<Connection>> open;
  const std::lock_guard lock(mu_);
  stopping_.store(true, std::memory_order_relaxed);
  for (const auto& [key, weak] : connections_) {
    if (auto connection = weak.lock()) open.push_back(std::move(connection));
  }
  return open;
}

void ServerCore::Sweep() {
  const std::int64_t now = SteadyNow();
  std::vector<std::shared_ptr<Connection>> expired;
  {
    const std::lock_guard lock(mu_);
    for (const auto& [key, weak] : connections_) {
      if (key->deadline() > now) continue;  // alive: its destructor's Unregister waits for mu_
      if (auto connection = weak.lock()) expired.push_back(std::move(connection));
    }
  }
  for (const auto& connection : expired) connection->CloseIfExpired();
}

void ServerCore::BeginStop() {
  for (const auto& connection : Open()) connection->Shutdown();
}

void ServerCore::CloseAll() {
  for (const auto& connection : Open()) connection->Close();
}

Connection::Connection(ServerCore& core, Phase phase) : core_(core), phase_(phase) {
  phase_since_.store(SteadyNow(), std::memory_order_relaxed);
  ExpireIn(core.options.header_timeout);  // counted from the accept, before Start
}

Connection::~Connection() { core_.Unregister(this); }

// Over TLS the handshake counts as reading a request: the connection may give way at the cap.
template <typename Stream>
StreamConnection<Stream>::StreamConnection(tcp::socket socket, ServerCore& core,
                                           std::shared_ptr<TlsContext> context)
    : Connection(core, kTls ? Phase::kReading : Phase::kIdle),
      context_(std::move(context)),
      stream_(MakeStream(std::move(socket), context_.get())),
      buffer_(core.options.max_header_bytes + kBufferSlack) {
  if constexpr (kTls) {
    // For the read behind a put-off request (ReadAheadWhileDeferred); asynchronous operations
    // are not affected.
    beast::error_code ignored;
    Socket().non_blocking(true, ignored);
  }
}

template <typename Stream>
Stream StreamConnection<Stream>::MakeStream(tcp::socket socket, TlsContext* context) {
  if constexpr (kTls) {
    return Stream(std::move(socket), *context);
  } else {
    return socket;
  }
}

template <typename Stream>
StreamConnection<Stream>::~StreamConnection() {
  core_.bodies.Give(body_capacity_);
}

template <typename Stream>
tcp::socket& StreamConnection<Stream>::Socket() {
  if constexpr (kTls) {
    return stream_.next_layer();
  } else {
    return stream_;
  }
}

template <typename Stream>
std::size_t StreamConnection<Stream>::OnChunkBody(std::string_view data, beast::error_code& ec) {
  if (!KeepBodyBytes(data)) {
    shed_ = true;
    ec = http::error::body_limit;
  }
  return data.size();
}

void Connection::SetPhase(Phase phase) {
  phase_since_.store(SteadyNow(), std::memory_order_relaxed);
  phase_.store(phase, std::memory_order_relaxed);
}

void Connection::ExpireIn(std::chrono::milliseconds timeout) {
  deadline_.store(SteadyNow() + std::chrono::nanoseconds(timeout).count(),
                  std::memory_order_relaxed);
}

void Connection::ExpireNever() {
  deadline_.store(std::numeric_limits<std::int64_t>::max(), std::memory_order_relaxed);
}

template <typename Stream>
void StreamConnection<Stream>::CloseSocket() {
  beast::error_code ignored;
  Socket().close(ignored);  // ends every operation in progress (operation_aborted)
}

template <typename Stream>
void StreamConnection<Stream>::Start() {
  net::post(Socket().get_executor(), [self = Self()] {
    if constexpr (kTls) {
      // Within the header timeout from the accept (the constructor's deadline), as a request.
      self->stream_.async_handshake(net::ssl::stream_base::server,
                                    [self](beast::error_code ec) { self->OnHandshake(ec); });
    } else {
      self->WaitForRequest(self->core_.options.header_timeout);
    }
  });
}

template <typename Stream>
void StreamConnection<Stream>::OnHandshake(beast::error_code ec) {
  if constexpr (kTls) {
    if (!ec) {
      PeerCertificate peer;
      switch (ReadPeerCertificate(stream_.native_handle(), peer)) {
        case PeerRead::kNone:
          break;
        case PeerRead::kRead:
          peer_ = std::move(peer);
          break;
        case PeerRead::kRefused:
          ec = net::error::access_denied;
          break;
      }
    }
    if (ec) {
      // Scanners, health checks by TCP and the cap's evictions end here by the thousand: counted,
      // and only at debug (the reason is OpenSSL's, never the client's bytes or certificate).
      core_.CountHandshakeFailure();
      core_.log.Debug("TLS handshake failed", {{"error", ec.message()}});
      CloseSocket();
      return;
    }
    // The request gets its own header timeout, as on a new plain connection.
    WaitForRequest(core_.options.header_timeout);
  }
}

template <typename Stream>
void StreamConnection<Stream>::Close() {
  net::post(Socket().get_executor(), [self = Self()] { self->CloseSocket(); });
}

template <typename Stream>
void StreamConnection<Stream>::CloseIfExpired() {
  net::post(Socket().get_executor(), [self = Self()] {
    // Checked again on its thread: it may have moved on (a new deadline) since the sweep looked.
    if (self->deadline() <= SteadyNow()) self->CloseSocket();
  });
}

template <typename Stream>
void StreamConnection<Stream>::Shutdown() {
  net::post(Socket().get_executor(), [self = Self()] {
    if (self->phase() != Phase::kBusy) {
      self->CloseSocket();
      return;
    }
    // Busy: an answer being sent closes the connection once sent (stopping() says no keep-alive);
    // a put-off request still waiting is answered 503 now.
    if (self->pending_ != nullptr && self->pending_->Abandon(Abandon::kStopping)) {
      self->pending_.reset();
      ++self->watch_;
      beast::error_code ignored;
      self->Socket().cancel(ignored);  // the watch
      self->response_.Reset();
      self->response_.SetError(503, "the server is shutting down");
      self->keep_alive_ = false;
      self->Send();
    }
  });
}

template <typename Stream>
Later StreamConnection<Stream>::Defer() {
  if (pending_ == nullptr) pending_ = std::make_shared<Pending>(weak_from_this());
  return Pending::MakeLater(pending_);
}

template <typename Stream>
void StreamConnection<Stream>::Redispatch() {
  net::post(Socket().get_executor(), [self = Self()] {
    if (self->pending_ == nullptr) return;  // ended meanwhile (the handler threw, the stop)
    self->pending_.reset();
    ++self->watch_;
    beast::error_code ignored;
    self->Socket().cancel(ignored);  // the watch
    ++self->attempt_;
    self->Dispatch();
  });
}

template <typename Stream>
void StreamConnection<Stream>::Deliver(std::function<void(Response&)> fill) {
  net::post(Socket().get_executor(), [self = Self(), fill = std::move(fill)] {
    if (self->pending_ == nullptr) return;  // ended meanwhile (the handler threw, the stop)
    self->pending_.reset();
    ++self->watch_;
    beast::error_code ignored;
    self->Socket().cancel(ignored);  // the watch
    self->response_.Reset();
    try {
      fill(self->response_);
    } catch (const std::exception& e) {
      self->core_.log.Error("a put-off answer failed", {{"error", e.what()}});
      self->response_.Reset();
      self->response_.SetError(500, "internal server error");
    }
    self->Send();
  });
}

template <typename Stream>
void StreamConnection<Stream>::WaitForRequest(std::chrono::milliseconds timeout) {
  attempt_ = 0;
  if (buffer_.size() > 0) {  // pipelined: the next request has begun already
    SetPhase(Phase::kReading);
    ExpireIn(core_.options.header_timeout);
    ReadHeader();
    return;
  }
  // Idle until the first byte; the header timeout starts only then (for a kept-alive connection;
  // a new one has the header timeout from its accept).
  SetPhase(Phase::kIdle);
  ExpireIn(timeout);
  stream_.async_read_some(
      buffer_.prepare(kFirstRead), [self = Self()](beast::error_code ec, std::size_t n) {
        if (ec) {  // the client closed, or stayed idle too long: nothing to answer
          self->CloseSocket();
          return;
        }
        self->buffer_.commit(n);
        self->SetPhase(Phase::kReading);
        self->ExpireIn(self->core_.options.header_timeout);
        self->ReadHeader();
      });
}

template <typename Stream>
void StreamConnection<Stream>::ReadHeader() {
  parser_.emplace();
  body_view_ = {};
  parser_->header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(
      core_.options.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
  parser_->body_limit(core_.options.max_body_bytes);
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = Self()](beast::error_code ec, std::size_t) { self->OnHeader(ec); });
}

template <typename Stream>
void StreamConnection<Stream>::OnHeader(beast::error_code ec) {
  if (ec) {
    OnReadError(ec, /*header_done=*/false);
    return;
  }
  if (parser_->is_done()) {
    Dispatch();
    return;
  }
  const auto& message = parser_->get();
  // A client that asked to be told before it sends its body (curl does, for large ones).
  if (message.version() >= 11 && beast::iequals(message[http::field::expect], "100-continue")) {
    ExpireIn(core_.options.body_timeout);
    net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                     [self = Self()](beast::error_code write_ec, std::size_t) {
                       if (write_ec) {
                         self->CloseSocket();
                         return;
                       }
                       self->ReadBody();
                     });
    return;
  }
  ReadBody();
}

template <typename Stream>
void StreamConnection<Stream>::ReadBody() {
  ExpireIn(core_.options.body_timeout);
  const auto& message = parser_->get();
  discard_body_ = core_.paths.BodyUseOf(View(message.method_string()), View(message.target())) ==
                  BodyUse::kDiscard;
  body_size_ = 0;
  shed_ = false;
  const boost::optional<std::uint64_t> length = parser_->content_length();
  if (!length || parser_->chunked()) {
    // Chunked: Beast's parser reads the chunks, and each is kept (or dropped) as it arrives.
    parser_->on_chunk_body(chunk_body_);
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](beast::error_code ec, std::size_t) { self->OnBody(ec); });
    return;
  }
  // A Content-Length body (the parser held it to max_body_bytes) goes straight from the socket
  // into memory kept for it: the parser would read it through buffer_ in header-sized pieces and
  // copy each into a string it zero-fills first.
  body_expected_ = static_cast<std::size_t>(*length);
  ReadBodyBytes();
}

template <typename Stream>
void StreamConnection<Stream>::ReadBodyBytes() {
  if (buffer_.size() > 0 && body_size_ < body_expected_) {  // what came with the header
    const std::size_t n = std::min(buffer_.size(), body_expected_ - body_size_);
    const bool kept = KeepBodyBytes({static_cast<const char*>(buffer_.data().data()), n});
    buffer_.consume(n);
    if (!kept) {
      Shed();
      return;
    }
  }
  if (body_size_ == body_expected_) {
    body_view_ = discard_body_ ? std::string_view() : std::string_view(body_.get(), body_size_);
    Dispatch();
    return;
  }
  net::mutable_buffer into;
  if (discard_body_) {
    into = net::buffer(discard_.data(), std::min(discard_.size(), body_expected_ - body_size_));
  } else {
    // Room for what is left, taken a piece at a time: at least kBodyStep more, or double.
    const std::size_t want = std::min(
        body_expected_, std::max({body_capacity_, body_size_ + kBodyStep, 2 * body_size_}));
    if (!ReserveBody(want)) {
      Shed();
      return;
    }
    into = net::buffer(body_.get() + body_size_, want - body_size_);
  }
  stream_.async_read_some(into, [self = Self()](beast::error_code ec, std::size_t n) {
    if (ec) {  // the client left, or its body timed out (which closed the socket)
      self->CloseSocket();
      return;
    }
    self->body_size_ += n;
    self->ReadBodyBytes();
  });
}

template <typename Stream>
bool StreamConnection<Stream>::KeepBodyBytes(std::string_view data) {
  if (discard_body_) {
    body_size_ += data.size();
    return true;
  }
  // Double, but never past the largest body a request may have (the parser refuses more).
  const std::size_t needed = body_size_ + data.size();
  if (needed > body_capacity_ &&
      !ReserveBody(std::max(needed, std::min(2 * body_capacity_, core_.options.max_body_bytes)))) {
    return false;
  }
  std::copy(data.begin(), data.end(), body_.get() + body_size_);
  body_size_ += data.size();
  return true;
}

template <typename Stream>
bool StreamConnection<Stream>::ReserveBody(std::size_t capacity) {
  if (capacity <= body_capacity_) return true;
  if (!core_.bodies.TryTake(capacity - body_capacity_)) return false;
  auto grown = std::make_unique_for_overwrite<char[]>(capacity);
  std::copy(body_.get(), body_.get() + body_size_, grown.get());
  body_ = std::move(grown);
  body_capacity_ = capacity;
  return true;
}

template <typename Stream>
void StreamConnection<Stream>::FreeBody() {
  core_.bodies.Give(body_capacity_);
  body_.reset();
  body_capacity_ = 0;
  body_size_ = 0;
}

template <typename Stream>
void StreamConnection<Stream>::OnBody(beast::error_code ec) {
  if (ec) {
    if (shed_) {
      Shed();
      return;
    }
    OnReadError(ec, /*header_done=*/true);
    return;
  }
  body_view_ = discard_body_ ? std::string_view() : std::string_view(body_.get(), body_size_);
  Dispatch();
}

template <typename Stream>
void StreamConnection<Stream>::Shed() {
  // Its memory back at once; the client is told to come back, and the rest of its body is read
  // and dropped while the answer lingers.
  FreeBody();
  core_.bodies.CountShed();
  Refuse(503,
         "the server holds its limit of " + std::to_string(core_.options.max_body_bytes_in_flight) +
             " bytes of request bodies; try again",
         "1");
}

template <typename Stream>
void StreamConnection<Stream>::OnReadError(beast::error_code ec, bool header_done) {
  if (ec == http::error::header_limit || (ec == http::error::buffer_overflow && !header_done)) {
    Refuse(431, "request headers over the limit of " +
                    std::to_string(core_.options.max_header_bytes) + " bytes");
  } else if (ec == http::error::body_limit || ec == http::error::buffer_overflow) {
    Refuse(413, "request body over the limit of " + std::to_string(core_.options.max_body_bytes) +
                    " bytes");
  } else if (IsHttpError(ec) && ec != http::error::end_of_stream &&
             ec != http::error::partial_message) {
    core_.log.Debug("malformed request", {{"error", ec.message()}});
    Refuse(400, "malformed request: " + ec.message());
  } else {
    // The client closed or reset the connection, or a timeout fired (which closed the socket):
    // there is no one to answer.
    CloseSocket();
  }
}

template <typename Stream>
void StreamConnection<Stream>::Dispatch() {
  SetPhase(Phase::kBusy);
  const auto& message = parser_->get();
  headers_.clear();
  for (const auto& field : message) {
    headers_.push_back({View(field.name_string()), View(field.value())});
  }
  const PeerCertificate* peer = nullptr;
  if constexpr (kTls) peer = peer_ ? &*peer_ : nullptr;
  Request request(View(message.method_string()), View(message.target()), headers_, body_view_, this,
                  peer);
  request.set_attempt(attempt_);
  response_.Reset();
  keep_alive_ = message.keep_alive();
  http10_ = message.version() == 10;
  const bool ok = core_.paths.Serve(request, response_, omit_body_, core_.log);
  if (pending_ != nullptr) {
    if (ok) {
      WatchWhileDeferred();
      return;
    }
    // The handler put its request off, then threw: the 500 it got is the answer.
    pending_->Abandon(Abandon::kClientGone);
    pending_.reset();
  }
  Send();
}

template <typename Stream>
void StreamConnection<Stream>::WatchWhileDeferred() {
  // No deadline of the server's own while the handler's answer is awaited (a pick's wait is its
  // pool's queue timeout); the client's going away is noticed, and abandons the request, whatever
  // it sent before leaving.
  ExpireNever();
  Socket().async_wait(net::ip::tcp::socket::wait_read,
                      [self = Self(), watch = watch_](beast::error_code ec) {
                        if (watch != self->watch_ || self->pending_ == nullptr)
                          return;  // answered meanwhile
                        if (!ec && self->ReadAheadWhileDeferred()) {
                          self->WatchWhileDeferred();
                          return;
                        }
                        if (self->pending_->Abandon(Abandon::kClientGone)) self->pending_.reset();
                        self->CloseSocket();
                      });
}

template <typename Stream>
bool StreamConnection<Stream>::ReadAheadWhileDeferred() {
  // What the client sends behind its put-off request (the next pipelined one) goes into buffer_,
  // where the next request's read starts, so that the watch sees past it to a close. Past what
  // the buffer holds (the header limit and a little), the client has no claim to more memory.
  const std::size_t room = buffer_.max_size() - buffer_.size();
  if (room == 0) return false;
  const auto space = buffer_.prepare(room);
  if constexpr (kTls) {
    // Through TLS, on the socket made non-blocking at the start: the read never waits (a whole
    // record not yet arrived is "nothing yet"; its bytes stay in the stream for the next read).
    beast::error_code ec;
    const std::size_t n = stream_.read_some(space, ec);
    buffer_.commit(n);
    return !ec || ec == net::error::would_block || ec == net::error::try_again;
  }
  const ssize_t n = ::recv(Socket().native_handle(), space.data(), space.size(), MSG_DONTWAIT);
  if (n > 0) {
    buffer_.commit(static_cast<std::size_t>(n));
    return true;
  }
  // 0: the client closed its side; an error other than "nothing yet": it is gone.
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

template <typename Stream>
void StreamConnection<Stream>::Send() {
  const bool keep_alive = keep_alive_ && !core_.stopping();
  const Framing framing{.keep_alive = keep_alive, .http10 = http10_, .omit_body = omit_body_};
  SerializeHead(response_, framing, out_);
  std::string_view body = BodyToSend(response_, framing);
  if constexpr (kTls) {
    // TLS writes a buffer a record: a small body goes in the head's, as one record.
    if (body.size() <= kTlsCoalesce) {
      out_.append(body);
      body = {};
    }
  }
  const std::array<net::const_buffer, 2> buffers = {net::buffer(out_),
                                                    net::buffer(body.data(), body.size())};
  SetPhase(Phase::kBusy);
  ExpireIn(core_.options.write_timeout);
  net::async_write(stream_, buffers,
                   [self = Self(), keep_alive](beast::error_code ec, std::size_t) {
                     self->OnSent(ec, keep_alive);
                   });
}

template <typename Stream>
void StreamConnection<Stream>::OnSent(beast::error_code ec, bool keep_alive) {
  // A large answer (/metrics) need not stay allocated on a connection that may idle for a minute.
  if (response_.body().capacity() > kKeptCapacity) std::string().swap(response_.body());
  if (body_capacity_ > kKeptBodyCapacity || !core_.bodies.RoomToKeep()) FreeBody();
  if (ec) {
    CloseSocket();
  } else if (keep_alive && !core_.stopping()) {
    WaitForRequest(core_.options.idle_timeout);
  } else {
    LingerThenClose();
  }
}

template <typename Stream>
void StreamConnection<Stream>::Refuse(int status, std::string_view message,
                                      std::string_view retry_after) {
  SetPhase(Phase::kBusy);
  response_.Reset();
  response_.SetError(status, message);
  if (!retry_after.empty()) response_.AddHeader("Retry-After", retry_after);
  keep_alive_ = false;
  omit_body_ = false;
  http10_ = false;
  Send();
}

template <typename Stream>
void StreamConnection<Stream>::LingerThenClose() {
  if constexpr (kTls) {
    // close_notify, then what the client still sends is read and dropped (OpenSSL drops data
    // after a close_notify sent) until its own close_notify or close, or the linger's end.
    SetPhase(Phase::kIdle);
    ExpireIn(kLinger);
    stream_.async_shutdown([self = Self()](beast::error_code) { self->CloseSocket(); });
    return;
  }
  beast::error_code ignored;
  Socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  SetPhase(Phase::kIdle);  // answered: it may give way to a new connection
  ExpireIn(kLinger);
  drained_ = 0;
  Drain();
}

template <typename Stream>
void StreamConnection<Stream>::Drain() {
  Socket().async_read_some(net::buffer(discard_),
                           [self = Self()](beast::error_code ec, std::size_t n) {
                             self->drained_ += n;
                             if (ec || self->drained_ > kMaxDrainBytes) {
                               self->CloseSocket();
                               return;
                             }
                             self->Drain();
                           });
}

template class StreamConnection<tcp::socket>;
template class StreamConnection<net::ssl::stream<tcp::socket>>;

}  // namespace eoc::server::internal

namespace eoc::server {

bool Later::Answer(std::function<void(Response&)> fill) const {
  return pending_ != nullptr && pending_->Answer(std::move(fill));
}

bool Later::Retry() const { return pending_ != nullptr && pending_->Retry(); }

void Later::OnAbandon(std::function<void(server::Abandon)> on_abandon) const {
  if (pending_ != nullptr) pending_->SetOnAbandon(std::move(on_abandon));
}

}  // namespace eoc::server
