// What a handler sees of a request, and the response it fills. Both are plain views and values
// with no Boost type in them, so handlers can be tested without a socket:
//
//   void Pick(const eoc::server::Request& req, eoc::server::Response& resp) {
//     auto session = req.header("x-session-id");            // case-insensitive; nullopt if absent
//     resp.AddHeader("x-gateway-destination-endpoint", "10.0.0.7:8000");   // no body: fastest
//   }
//   std::vector<eoc::server::Header> headers = {{"X-Session-Id", "s1"}};
//   eoc::server::Request req("GET", "/v1/pools/ns/a/pick?x=1", headers, "");
//   eoc::server::Response resp;
//   Pick(req, resp);
//
// The server keeps one Response per connection and Reset()s it between requests, so a handler that
// answers with a status and a header allocates nothing once the connection is warm.
//
// A handler that cannot answer yet (a pick waiting in its pool's queue) puts the request off and
// returns, so that it holds no I/O thread; it answers later from any thread:
//
//   eoc::server::Later later = req.Defer();
//   later.OnAbandon([ticket](eoc::server::Abandon why) { queue.Cancel(ticket); });
//   ... on another thread, once:
//   later.Answer([](eoc::server::Response& resp) { resp.AddHeader("x-answer", "42"); });
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace eoc::server {

class Response;
class Later;

namespace internal {
class Pending;
// What can put a request off: the connection it came on.
class Deferrer {
 public:
  virtual Later Defer() = 0;

 protected:
  Deferrer() = default;
  virtual ~Deferrer() = default;
  Deferrer(const Deferrer&) = default;
  Deferrer& operator=(const Deferrer&) = default;
  Deferrer(Deferrer&&) = default;
  Deferrer& operator=(Deferrer&&) = default;
};
}  // namespace internal

// Why a request that was put off ends without its handler's answer.
enum class Abandon {
  kClientGone,  // the client closed the connection: there is no one to answer
  kStopping,    // the server is stopping: it answers 503 itself
};

// A request put off by Request::Defer, to be answered later from any thread. A copyable handle;
// a default-constructed one answers nothing.
class Later {
 public:
  Later() = default;

  // Answers the request: `fill` runs on the connection's thread with a fresh Response (200, as a
  // handler gets it), and what it fills is sent. Only the first of Answer and Retry does anything:
  // false when the request was answered, retried or abandoned already (then `fill` is not run). A
  // `fill` that throws makes the answer a 500.
  bool Answer(std::function<void(Response&)> fill) const;

  // Runs the request's handler again, on the connection's thread, with the same Request (its
  // attempt() one more): for a handler that put its request off until something it needs is
  // known (a caller's review). Only the first of Answer and Retry does anything: false when the
  // request was answered, retried or abandoned already.
  bool Retry() const;

  // `on_abandon` runs once, on the connection's thread, if the request ends without an Answer (see
  // Abandon). Set it before the handler that deferred returns; it must not block.
  void OnAbandon(std::function<void(Abandon)> on_abandon) const;

 private:
  friend class internal::Pending;
  explicit Later(std::shared_ptr<internal::Pending> pending) : pending_(std::move(pending)) {}
  std::shared_ptr<internal::Pending> pending_;
};

struct Header {
  std::string_view name;
  std::string_view value;
};

// Who the client is, from the certificate it showed in the TLS handshake (verified against the
// listener's client CA file): the subject's common name and each of its organizations, in the
// certificate's order, as UTF-8. Bounded: a certificate with more than one common name, more than
// kMaxOrganizations organizations, a name longer than kMaxNameBytes or a control character in one
// is refused (its connection is closed after the handshake), never cut short.
struct PeerCertificate {
  static constexpr std::size_t kMaxNameBytes = 256;
  static constexpr std::size_t kMaxOrganizations = 16;

  std::string common_name;  // empty when the subject has none
  std::vector<std::string> organizations;
};

// A request, as views into the server's buffers: valid only while the handler runs.
class Request {
 public:
  Request(std::string_view method, std::string_view target, std::span<const Header> headers,
          std::string_view body, internal::Deferrer* deferrer = nullptr,
          const PeerCertificate* peer_certificate = nullptr);

  // "GET", as sent: methods are case-sensitive.
  std::string_view method() const { return method_; }
  std::string_view target() const { return target_; }  // "/v1/pick?a=b", as sent
  std::string_view path() const { return path_; }      // "/v1/pick": the target before any '?'
  std::string_view query() const { return query_; }    // "a=b": after the '?', still encoded
  std::string_view body() const { return body_; }
  std::span<const Header> headers() const { return headers_; }
  // The first header with this name (case-insensitive), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const;
  // The path's {parameters} of the route that matched, in the pattern's order, still
  // percent-encoded ("/v1/pools/{namespace}/{name}/pick": namespace, name).
  std::span<const std::string_view> params() const { return params_; }
  void set_params(std::span<const std::string_view> params) { params_ = params; }
  // The client's verified certificate, or nullptr when it showed none (plain HTTP, or TLS
  // without a client certificate). Read once a connection, after its handshake.
  const PeerCertificate* peer_certificate() const { return peer_certificate_; }
  // How many times the request has been handed to its handler before (Later::Retry).
  int attempt() const { return attempt_; }
  void set_attempt(int attempt) { attempt_ = attempt; }

  // Puts the request off: the handler returns without answering, and the connection waits for
  // the Later's Answer (reading nothing more meanwhile; pipelined requests wait their turn). What
  // the handler filled into its Response is discarded. Throws std::logic_error for a request that
  // came on no connection (built by a test).
  Later Defer() const;

 private:
  std::string_view method_;
  std::string_view target_;
  std::string_view path_;
  std::string_view query_;
  std::span<const Header> headers_;
  std::string_view body_;
  std::span<const std::string_view> params_;
  internal::Deferrer* deferrer_ = nullptr;
  const PeerCertificate* peer_certificate_ = nullptr;
  int attempt_ = 0;
};

// A response: 200, no headers of its own and an empty body until the handler says otherwise. The
// server adds Content-Length, Connection and Date, and Content-Type when there is a body.
class Response {
 public:
  Response() = default;

  int status() const { return status_; }
  // 200 to 599; throws std::invalid_argument otherwise (1xx are the server's business).
  void set_status(int status);

  const std::string& content_type() const { return content_type_; }
  void set_content_type(std::string_view content_type);  // text/plain; charset=utf-8 by default

  std::string& body() { return body_; }  // append to it, or assign
  const std::string& body() const { return body_; }

  // Adds a header line. Throws std::invalid_argument for a name that is not an HTTP token, a value
  // with CR, LF or NUL in it (header injection), or a header the server sets itself
  // (Content-Length, Content-Type, Connection, Date, Transfer-Encoding).
  void AddHeader(std::string_view name, std::string_view value);
  // The added headers, each as "Name: value\r\n".
  std::string_view header_lines() const { return header_lines_; }

  // An error answer, as every endpoint of the server gives one: `status` and the JSON body
  // {"code":status,"message":"..."} (the message names the field or the problem), replacing any
  // body and content type set before; headers already added stay.
  void SetError(int status, std::string_view message);

  // Back to 200, default content type, no headers, empty body; keeps the memory for reuse.
  void Reset();

 private:
  int status_ = 200;
  std::string content_type_{kDefaultContentType};
  std::string body_;
  std::string header_lines_;

  static constexpr std::string_view kDefaultContentType = "text/plain; charset=utf-8";
};

// Answers one request; runs on an I/O thread, so it must not block.
using Handler = std::function<void(const Request&, Response&)>;

// What a route does with a request's body: keep it for the handler, or read and drop it.
enum class BodyUse : std::uint8_t { kRead, kDiscard };

// "text/plain; version=0.0.4; charset=utf-8": the Prometheus text exposition format.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";
// The content type of JSON answers, errors included (Response::SetError).
inline constexpr std::string_view kJsonContentType = "application/json";

}  // namespace eoc::server
