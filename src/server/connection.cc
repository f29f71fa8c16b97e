#include "server/connection.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
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
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

std::string_view View(beast::string_view text) { return {text.data(), text.size()}; }

bool IsHttpError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

}  // namespace

ServerCore::Admission ServerCore::Register(const std::shared_ptr<Connection>& connection) {
  const std::lock_guard lock(mu_);
  if (stopping()) return Admission::kStopping;
  if (connections_.size() >= options.max_connections) return Admission::kFull;
  connections_.emplace(connection.get(), connection);
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

void ServerCore::CloseAll() {
  std::vector<std::shared_ptr<Connection>> open;
  {
    const std::lock_guard lock(mu_);
    stopping_.store(true, std::memory_order_relaxed);
    for (const auto& [key, weak] : connections_) {
      if (auto connection = weak.lock()) open.push_back(std::move(connection));
    }
  }
  for (const auto& connection : open) connection->Close();
}

Connection::Connection(net::ip::tcp::socket socket, ServerCore& core)
    : core_(core),
      stream_(std::move(socket)),
      buffer_(core.options.max_header_bytes + kBufferSlack) {}

Connection::~Connection() { core_.Unregister(this); }

void Connection::Start() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->stream_.expires_after(self->core_.options.header_timeout);
    self->ReadHeader();
  });
}

void Connection::Close() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->stream_.close(); });
}

void Connection::WaitForRequest() {
  if (buffer_.size() > 0) {  // pipelined: the next request has begun already
    stream_.expires_after(core_.options.header_timeout);
    ReadHeader();
    return;
  }
  // Idle until the first byte; the header timeout starts only then.
  stream_.expires_after(core_.options.idle_timeout);
  stream_.async_read_some(buffer_.prepare(kFirstRead), [self = shared_from_this()](
                                                           beast::error_code ec, std::size_t n) {
    if (ec) {  // the client closed, or stayed idle too long: nothing to answer
      self->stream_.close();
      return;
    }
    self->buffer_.commit(n);
    self->stream_.expires_after(self->core_.options.header_timeout);
    self->ReadHeader();
  });
}

void Connection::ReadHeader() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(
      core_.options.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
  parser_->body_limit(core_.options.max_body_bytes);
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnHeader(ec); });
}

void Connection::OnHeader(beast::error_code ec) {
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
    stream_.expires_after(core_.options.body_timeout);
    net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                     [self = shared_from_this()](beast::error_code write_ec, std::size_t) {
                       if (write_ec) {
                         self->stream_.close();
                         return;
                       }
                       self->ReadBody();
                     });
    return;
  }
  ReadBody();
}

void Connection::ReadBody() {
  stream_.expires_after(core_.options.body_timeout);
  http::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnBody(ec); });
}

void Connection::OnBody(beast::error_code ec) {
  if (ec) {
    OnReadError(ec, /*header_done=*/true);
    return;
  }
  Dispatch();
}

void Connection::OnReadError(beast::error_code ec, bool header_done) {
  if (ec == http::error::header_limit || (ec == http::error::buffer_overflow && !header_done)) {
    Refuse(431, "request header fields too large\n");
  } else if (ec == http::error::body_limit || ec == http::error::buffer_overflow) {
    Refuse(413, "request body too large\n");
  } else if (IsHttpError(ec) && ec != http::error::end_of_stream &&
             ec != http::error::partial_message) {
    core_.log.Debug("malformed request", {{"error", ec.message()}});
    Refuse(400, "bad request: " + ec.message() + "\n");
  } else {
    // The client closed or reset the connection, or a timeout fired (which closed the socket):
    // there is no one to answer.
    stream_.close();
  }
}

void Connection::Dispatch() {
  const auto& message = parser_->get();
  headers_.clear();
  for (const auto& field : message) {
    headers_.push_back({View(field.name_string()), View(field.value())});
  }
  const Request request(View(message.method_string()), View(message.target()), headers_,
                        message.body());
  response_.Reset();
  bool omit_body = false;
  core_.paths.Serve(request, response_, omit_body, core_.log);
  Send(message.keep_alive() && !core_.stopping(), omit_body, message.version() == 10);
}

void Connection::Send(bool keep_alive, bool omit_body, bool http10) {
  const Framing framing{.keep_alive = keep_alive, .http10 = http10, .omit_body = omit_body};
  SerializeHead(response_, framing, out_);
  const std::string_view body = BodyToSend(response_, framing);
  const std::array<net::const_buffer, 2> buffers = {net::buffer(out_),
                                                    net::buffer(body.data(), body.size())};
  stream_.expires_after(core_.options.write_timeout);
  net::async_write(stream_, buffers,
                   [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                     self->OnSent(ec, keep_alive);
                   });
}

void Connection::OnSent(beast::error_code ec, bool keep_alive) {
  // A large answer (/metrics) need not stay allocated on a connection that may idle for a minute.
  if (response_.body().capacity() > kKeptCapacity) std::string().swap(response_.body());
  if (ec) {
    stream_.close();
  } else if (keep_alive) {
    WaitForRequest();
  } else {
    LingerThenClose();
  }
}

void Connection::Refuse(int status, std::string_view message) {
  response_.Reset();
  response_.set_status(status);
  response_.body().assign(message);
  Send(/*keep_alive=*/false, /*omit_body=*/false, /*http10=*/false);
}

void Connection::LingerThenClose() {
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  stream_.expires_after(kLinger);
  drained_ = 0;
  Drain();
}

void Connection::Drain() {
  stream_.async_read_some(net::buffer(discard_),
                          [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                            self->drained_ += n;
                            if (ec || self->drained_ > kMaxDrainBytes) {
                              self->stream_.close();
                              return;
                            }
                            self->Drain();
                          });
}

}  // namespace eoc::server::internal
