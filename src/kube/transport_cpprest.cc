// The cpprestsdk transport. Everything that knows about cpprestsdk, Boost.Asio or OpenSSL lives in
// this file.
#include <cpprest/http_client.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pplx/threadpool.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <mutex>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/url.h"
#include "kube/transport.h"

namespace eoc::kube {
namespace {

namespace http = web::http;
using http::client::http_client;
using http::client::http_client_config;
using Socket = boost::asio::ip::tcp::socket;
using SslStream = boost::asio::ssl::stream<Socket&>;

// Bodies are read in pieces of at most this size, as soon as any bytes are there.
constexpr std::size_t kReadChunkBytes = std::size_t{64} << 10;

// The parts of the server's URL; empty ones when it is not an http(s) URL (cpprestsdk then refuses
// it at the first request).
HttpUrl ServerUrl(const RestConfig& config) {
  return SplitHttpUrl(config.server).value_or(HttpUrl{});
}

std::string Describe(const HttpRequest& request, const std::string& server) {
  return request.method + " " + server + request.path;
}

// Reads what is buffered now, or waits for at least one byte. Returns 0 at the end of the body.
std::size_t ReadSome(Concurrency::streams::streambuf<uint8_t>& buf, std::vector<uint8_t>& chunk) {
  const std::size_t want = std::clamp<std::size_t>(buf.in_avail(), 1, chunk.size());
  return buf.getn(chunk.data(), want).get();
}

// Whether writing the request failed, so the server never had the whole of it. cpprestsdk sends a
// request again by itself when a pooled connection turns out closed as the answer is read, but not
// when the write fails: a connection the server closed while it sat in the pool (an API server
// that restarted) can fail between the headers and the body ("Failed to write request body").
// Such a request is safe to send again whatever its method. The pool that held the stale connection
// likely holds more (every connection of an API server that restarted), so the request goes again
// on a new client, whose first connection is new.
bool NotSent(const std::exception& e) {
  const auto* he = dynamic_cast<const http::http_exception*>(&e);
  return he != nullptr && std::string_view(he->what()).starts_with("Failed to write request");
}
// At most this many sends again of one request.
constexpr int kMaxResends = 2;

TransportError ToTransportError(const std::exception& e, const std::string& what) {
  if (const auto* he = dynamic_cast<const http::http_exception*>(&e)) {
    if (he->error_code() == std::errc::timed_out) {
      return {kReasonTimeout, what + ": timed out (" + he->what() + ")"};
    }
    if (he->error_code() == std::errc::operation_canceled) {
      return {kReasonCancelled, what + ": cancelled"};
    }
  }
  return {kReasonTransport, what + ": " + e.what()};
}

// A request's total deadline (HttpRequest::deadline). cpprestsdk's own timeout restarts on every
// read, so it cannot cut an answer that trickles in; this cancels the request's token when the
// deadline passes, which closes its connection whether it waits for the headers or reads the body.
// The timer runs on cpprestsdk's own thread pool: no thread of ours waits on it.
class Deadline {
 public:
  // Cancels `cancel` when `limit` passes; never for a limit of zero.
  Deadline(std::chrono::milliseconds limit, const pplx::cancellation_token_source& cancel)
      : limit_(limit) {
    if (limit_ <= std::chrono::milliseconds::zero()) return;
    state_ = std::make_shared<State>(crossplat::threadpool::shared_instance().service(), cancel);
    state_->timer.expires_after(limit_);
    state_->timer.async_wait([state = state_](const boost::system::error_code& ec) {
      if (ec) return;  // cancelled: the request ended first
      state->fired = true;
      state->cancel.cancel();
    });
  }
  ~Deadline() {
    if (state_) state_->timer.cancel();
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;
  Deadline(Deadline&&) = delete;
  Deadline& operator=(Deadline&&) = delete;

  bool passed() const { return state_ && state_->fired.load(); }
  TransportError Error(const std::string& what) const {
    return {kReasonTimeout,
            what + ": timed out (deadline of " + std::to_string(limit_.count()) + " ms)"};
  }

 private:
  struct State {
    State(boost::asio::io_context& io, pplx::cancellation_token_source source)
        : timer(io), cancel(std::move(source)) {}
    boost::asio::steady_timer timer;
    pplx::cancellation_token_source cancel;
    std::atomic<bool> fired{false};
  };
  std::chrono::milliseconds limit_;
  std::shared_ptr<State> state_;
};

// Sets TCP keepalive on the connection's socket. cpprestsdk calls this before each request, on a
// socket that is open (a pooled connection) or not yet (a new one, which we open here so the
// option sticks; should the guessed address family not match the resolved address, cpprestsdk
// moves on to a fresh connection and the request still goes through, without keepalive).
void SetKeepalive(Socket& socket, bool ipv6, const TransportOptions& o) {
  boost::system::error_code ec;
  if (!socket.is_open()) {
    socket.open(ipv6 ? boost::asio::ip::tcp::v6() : boost::asio::ip::tcp::v4(), ec);
    if (ec) return;
  }
  socket.set_option(boost::asio::socket_base::keep_alive(true), ec);
  const int fd = socket.native_handle();
  const int idle = static_cast<int>(o.keepalive_idle.count());
  const int interval = static_cast<int>(o.keepalive_interval.count());
  const int count = o.keepalive_count;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

// Trust exactly the cluster CA when there is one (as kubectl does), not the system's roots too.
void LoadTls(boost::asio::ssl::context& ctx, const std::string& ca_pem, const Credentials& creds) {
  if (!ca_pem.empty()) {
    SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
    ctx.add_certificate_authority(boost::asio::buffer(ca_pem));
  }
  if (!creds.client_cert_pem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(creds.client_cert_pem));
    ctx.use_private_key(boost::asio::buffer(creds.client_key_pem), boost::asio::ssl::context::pem);
  }
}

class CpprestLineStream final : public LineStream {
 public:
  CpprestLineStream(std::unique_ptr<http_client> client, http::http_response response,
                    pplx::cancellation_token_source cancel, std::size_t max_line, std::string what)
      : client_(std::move(client)),
        response_(std::move(response)),
        body_(response_.body().streambuf()),
        cancel_(std::move(cancel)),
        max_line_(max_line),
        what_(std::move(what)),
        chunk_(kReadChunkBytes) {}

  ~CpprestLineStream() override { Cancel(); }
  CpprestLineStream(const CpprestLineStream&) = delete;
  CpprestLineStream& operator=(const CpprestLineStream&) = delete;
  CpprestLineStream(CpprestLineStream&&) = delete;
  CpprestLineStream& operator=(CpprestLineStream&&) = delete;

  std::optional<std::string> NextLine() override {
    for (;;) {
      if (auto line = TakeLine()) return line;
      if (pending_.size() - start_ > max_line_) {
        throw TransportError(kReasonTooLarge, what_ + ": a line of the stream exceeds " +
                                                  std::to_string(max_line_) + " bytes");
      }
      if (eof_ || cancelled_) return TakeRest();
      std::size_t n = 0;
      try {
        n = ReadSome(body_, chunk_);
      } catch (const std::exception& e) {
        if (cancelled_) return std::nullopt;
        throw ToTransportError(e, what_);
      }
      if (n == 0) {
        eof_ = true;
      } else {
        pending_.append(reinterpret_cast<const char*>(chunk_.data()), n);
      }
    }
  }

  void Cancel() override {
    if (!cancelled_.exchange(true)) cancel_.cancel();
  }

 private:
  std::optional<std::string> TakeLine() {
    const auto pos = pending_.find('\n', scan_);
    if (pos == std::string::npos) {
      scan_ = pending_.size();
      return std::nullopt;
    }
    std::string line = pending_.substr(start_, pos - start_);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    start_ = scan_ = pos + 1;
    if (start_ > pending_.size() / 2) {  // compact now and then, not on every line
      pending_.erase(0, start_);
      start_ = 0;
      scan_ = 0;
    }
    return line;
  }

  std::optional<std::string> TakeRest() {
    if (cancelled_ || start_ == pending_.size()) return std::nullopt;
    std::string rest = pending_.substr(start_);
    pending_.clear();
    start_ = scan_ = 0;
    return rest;
  }

  std::unique_ptr<http_client> client_;
  http::http_response response_;
  Concurrency::streams::streambuf<uint8_t> body_;
  pplx::cancellation_token_source cancel_;
  const std::size_t max_line_;
  const std::string what_;
  std::vector<uint8_t> chunk_;
  std::string pending_;
  std::size_t start_ = 0;  // where the next line begins in pending_
  std::size_t scan_ = 0;   // how far pending_ is known to hold no newline
  bool eof_ = false;
  std::atomic<bool> cancelled_{false};
};

class CpprestTransport final : public Transport {
 public:
  CpprestTransport(RestConfig config, std::shared_ptr<CredentialSource> credentials,
                   TransportOptions options)
      : config_(std::move(config)),
        credentials_(std::move(credentials)),
        options_(std::move(options)),
        https_(ServerUrl(config_).scheme == "https"),
        ipv6_(ServerUrl(config_).authority.starts_with('[')) {}

  HttpResponse Send(const HttpRequest& request) override {
    const std::string what = Describe(request, config_.server);
    // Over every attempt. Cancelling it closes the attempt's connection whatever the request waits
    // for or reads: the deadline cancels it when it passes, ReadAll at the size limit.
    const pplx::cancellation_token_source cancel;
    const Deadline deadline(request.deadline, cancel);
    bool refreshed = false;
    int resends = 0;
    for (;;) {
      const Credentials creds = CurrentCredentials(what);
      auto client = SharedClient(creds);
      HttpResponse out;
      try {
        http::http_response response =
            client->request(Build(request, creds), cancel.get_token()).get();
        out.status = response.status_code();
        out.retry_after = RetryAfter(response);
        out.body = ReadAll(response, cancel, what);
      } catch (const TransportError&) {
        throw;
      } catch (const std::exception& e) {
        if (deadline.passed()) throw deadline.Error(what);
        if (NotSent(e) && resends < kMaxResends) {
          ++resends;
          DropClient(client);  // its pool may hold more connections as stale as this one
          continue;
        }
        throw ToTransportError(e, what);
      }
      if (out.status == 401 && !refreshed && Refreshed(creds)) {
        refreshed = true;
        continue;
      }
      return out;
    }
  }

  StreamResult Stream(const HttpRequest& request, std::chrono::milliseconds idle_timeout) override {
    const std::string what = Describe(request, config_.server);
    for (int attempt = 0;; ++attempt) {
      const Credentials creds = CurrentCredentials(what);
      // A client of its own: its timeout is the stream's idle timeout, and its one connection
      // goes away with the stream.
      auto client = MakeClient(creds, idle_timeout);
      pplx::cancellation_token_source cancel;
      StreamResult result;
      try {
        http::http_response response =
            client->request(Build(request, creds), cancel.get_token()).get();
        result.response.status = response.status_code();
        if (result.response.status >= 200 && result.response.status < 300) {
          result.stream =
              std::make_unique<CpprestLineStream>(std::move(client), std::move(response),
                                                  std::move(cancel), options_.max_line_bytes, what);
          return result;
        }
        result.response.retry_after = RetryAfter(response);
        result.response.body = ReadAll(response, cancel, what);
      } catch (const TransportError&) {
        throw;
      } catch (const std::exception& e) {
        throw ToTransportError(e, what);
      }
      if (result.response.status == 401 && attempt == 0 && Refreshed(creds)) continue;
      return result;
    }
  }

 private:
  Credentials CurrentCredentials(const std::string& what) const {
    try {
      return credentials_->Get();
    } catch (const CredentialError& e) {
      throw TransportError(kReasonCredentials, what + ": " + e.what());
    }
  }

  // After a 401: true when fresh credentials differ from the ones that were refused.
  bool Refreshed(const Credentials& refused) {
    credentials_->Invalidate();
    try {
      return credentials_->Get() != refused;
    } catch (const CredentialError&) {
      return false;  // the 401 answer stands; the next call reports the credential error
    }
  }

  std::shared_ptr<http_client> SharedClient(const Credentials& creds) {
    const std::lock_guard lock(mu_);
    if (!shared_ || shared_cert_ != creds.client_cert_pem || shared_key_ != creds.client_key_pem) {
      shared_ = MakeClient(creds, options_.request_timeout);
      shared_cert_ = creds.client_cert_pem;
      shared_key_ = creds.client_key_pem;
    }
    return shared_;
  }

  // The shared client goes (if it is still `client`): the next request makes a new one. Requests
  // in flight on it keep it until they end.
  void DropClient(const std::shared_ptr<http_client>& client) {
    const std::lock_guard lock(mu_);
    if (shared_ == client) shared_.reset();
  }

  std::unique_ptr<http_client> MakeClient(const Credentials& creds,
                                          std::chrono::milliseconds timeout) const {
    http_client_config cfg;
    cfg.set_timeout(timeout);
    cfg.set_validate_certificates(!config_.insecure_skip_tls_verify);
    const std::string ca = config_.ca_pem;
    cfg.set_ssl_context_callback(
        [ca, creds](boost::asio::ssl::context& ctx) { LoadTls(ctx, ca, creds); });
    cfg.set_nativehandle_options([https = https_, ipv6 = ipv6_,
                                  opts = options_](web::http::client::native_handle h) {
      Socket& socket = https ? static_cast<SslStream*>(h)->next_layer() : *static_cast<Socket*>(h);
      SetKeepalive(socket, ipv6, opts);
    });
    return std::make_unique<http_client>(web::uri(config_.server), cfg);
  }

  http::http_request Build(const HttpRequest& request, const Credentials& creds) const {
    http::http_request r(http::method(request.method));
    r.set_request_uri(web::uri(request.path));
    r.headers().add("Accept", request.accept.empty() ? "application/json" : request.accept);
    r.headers().add("User-Agent", options_.user_agent);
    if (!creds.token.empty()) r.headers().add("Authorization", "Bearer " + creds.token);
    // cpprestsdk verifies the server's name against the Host header when there is one.
    if (!config_.tls_server_name.empty()) r.headers().add("Host", config_.tls_server_name);
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH") {
      r.set_body(std::vector<unsigned char>(request.body.begin(), request.body.end()));
      r.headers().set_content_type(request.content_type.empty() ? "application/json"
                                                                : request.content_type);
    }
    return r;
  }

  // The answer's body, at most max_response_bytes of it. Past that, `cancel` (the request's)
  // closes the connection before TooLarge is thrown: cpprestsdk reads the body on its own threads
  // whether or not anyone takes it, so a body refused but not cut would be read to its end, and
  // an endless one for ever.
  std::string ReadAll(http::http_response& response, const pplx::cancellation_token_source& cancel,
                      const std::string& what) const {
    std::size_t declared = 0;
    if (response.headers().match("Content-Length", declared) &&
        declared > options_.max_response_bytes) {
      cancel.cancel();
      throw TransportError(kReasonTooLarge, what + ": the answer's " + std::to_string(declared) +
                                                " bytes exceed the limit of " +
                                                std::to_string(options_.max_response_bytes));
    }
    auto buf = response.body().streambuf();
    std::vector<uint8_t> chunk(kReadChunkBytes);
    std::string out;
    for (;;) {
      const std::size_t n = ReadSome(buf, chunk);
      if (n == 0) return out;
      if (out.size() + n > options_.max_response_bytes) {
        cancel.cancel();
        throw TransportError(kReasonTooLarge, what + ": the answer exceeds the limit of " +
                                                  std::to_string(options_.max_response_bytes) +
                                                  " bytes");
      }
      out.append(reinterpret_cast<const char*>(chunk.data()), n);
    }
  }

  static std::string RetryAfter(const http::http_response& response) {
    const auto it = response.headers().find("Retry-After");
    return it == response.headers().end() ? std::string() : it->second;
  }

  const RestConfig config_;
  const std::shared_ptr<CredentialSource> credentials_;
  const TransportOptions options_;
  const bool https_;
  const bool ipv6_;
  std::mutex mu_;
  std::shared_ptr<http_client> shared_;
  std::string shared_cert_;
  std::string shared_key_;
};

}  // namespace

std::unique_ptr<Transport> MakeCpprestTransport(const RestConfig& config,
                                                std::shared_ptr<CredentialSource> credentials,
                                                const TransportOptions& options) {
  return std::make_unique<CpprestTransport>(config, std::move(credentials), options);
}

}  // namespace eoc::kube
