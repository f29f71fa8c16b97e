// The operator's HTTP/1.1 server (Boost.Beast on Asio): /metrics, /healthz, /readyz and the pick
// endpoint. Routes by exact path or by pattern ("/v1/pools/{namespace}/{name}/pick"), a handler
// per method; keep-alive and pipelining; handlers that answer later without holding a thread
// (Request::Defer); every buffer, wait and count bounded, so that no client can make it grow or
// hang (DESIGN.md, "The pick endpoint").
//
//   eoc::server::HttpServer server({.address = ":8080", .threads = 2});
//   server.Handle("GET", "/healthz", eoc::server::HealthzHandler());
//   server.Handle("POST", "/v1/pick", [&](const eoc::server::Request& req,
//                                         eoc::server::Response& resp) { ... });
//   server.Start();                       // throws std::runtime_error if it cannot listen
//   std::uint16_t port = server.port();   // the bound port, also when asked for port 0
//   ...
//   server.Stop();                        // or let the destructor do it
//
// Handlers run on the I/O threads, so they must not block: a slow handler holds up every
// connection that thread serves; one that must wait defers its request (http.h). A HEAD request is
// answered by the path's GET handler, without the body. Errors the server answers itself, each as
// JSON {"code":N,"message":"..."} (Response::SetError): 400 malformed request (then close), 404
// unknown path, 405 method not registered for the path (with Allow), 413 body over the limit and
// 431 headers over the limit (both then close, without reading the rest), 500 when a handler
// throws, 503 to a deferred request still waiting when the server stops.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/http.h"

namespace eoc::server {

// Which clients must show a certificate, under TLS.
enum class ClientCerts : std::uint8_t {
  kNone,     // none is asked for
  kRequest,  // asked for; one that is sent must chain to client_ca_file, or the handshake fails
  kRequire,  // the handshake fails without a certificate that chains to client_ca_file
};

// The files of a TLS listener, in PEM. They are read at Start() and again whenever their content
// changes (checked every check_interval, by path, so a Secret volume's swapped `..data` symlink
// is followed): a new set that loads serves the connections accepted from then on; one that does
// not (unreadable, a key that does not match its certificate) is logged and the old one kept.
struct TlsFiles {
  std::string cert_file;       // the server's certificate, then any intermediates
  std::string key_file;        // its private key
  std::string client_ca_file;  // the CAs client certificates must chain to; with kRequest/kRequire
  ClientCerts client_certs = ClientCerts::kNone;
  std::chrono::milliseconds check_interval = std::chrono::seconds(2);
};

struct ServerOptions {
  // host:port. An IP address (IPv6 in brackets: "[::1]:8080"), "localhost", or nothing for every
  // IPv4 interface (":8080", as controller-runtime's --metrics-bind-address). Port 0: any free
  // port, see HttpServer::port().
  std::string address = "127.0.0.1:0";
  // I/O threads, each with the connections it was given (in turn, as they were accepted); one
  // more thread accepts and enforces the timeouts.
  int threads = 1;
  // A request's start line and headers, together; more answers 431.
  std::size_t max_header_bytes = std::size_t{8} * 1024;
  // A request's body; more answers 413 (as soon as Content-Length says so).
  std::size_t max_body_bytes = std::size_t{1024} * 1024;
  // The bodies of every connection together (what they have read, and what they keep for their
  // next request), taken as bytes arrive: a request whose body would pass it is answered 503
  // with Retry-After: 1, and its connection closed. At least max_body_bytes.
  std::size_t max_body_bytes_in_flight = std::size_t{256} * 1024 * 1024;
  // From a connection's accept, or a request's first byte, to the end of its headers.
  std::chrono::milliseconds header_timeout = std::chrono::seconds(10);
  // Between requests on a kept-alive connection.
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(60);
  // From the end of the headers to the end of the body.
  std::chrono::milliseconds body_timeout = std::chrono::seconds(30);
  // To send one response: a client that stops reading is dropped after this.
  std::chrono::milliseconds write_timeout = std::chrono::seconds(30);
  // Connections open at once. At the cap a new connection takes the place of the one that has
  // waited longest on its client (idle, or still sending its request); when all are busy
  // answering, the new one is closed as soon as it is accepted.
  std::size_t max_connections = 1024;
  // How long Stop() lets connections finish sending their answers before it closes them.
  std::chrono::milliseconds drain_timeout = std::chrono::seconds(5);
  // TLS (1.2 or 1.3; Mozilla's intermediate ciphers; no renegotiation, no compression), or plain
  // HTTP without it. The handshake must end within header_timeout of the accept; until then the
  // connection counts as sending its request (for the cap). A client's verified certificate
  // reaches handlers (Request::peer_certificate).
  std::optional<TlsFiles> tls;
};

class HttpServer {
 public:
  // Throws std::invalid_argument for a malformed address, a limit below 1, or TLS options that do
  // not fit together (no cert or key file; a client CA file with kNone, or none with the others).
  explicit HttpServer(ServerOptions options = {});
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  HttpServer(HttpServer&&) = delete;
  HttpServer& operator=(HttpServer&&) = delete;

  // Routes requests for exactly `path` (no query string) with this `method` ("GET") to `handler`.
  // Before Start() only (routes are read without locks afterwards): throws std::logic_error after,
  // and std::invalid_argument for a route registered twice. With BodyUse::kDiscard the body is
  // read and dropped as it arrives, never held, and the handler sees none.
  void Handle(std::string_view method, std::string_view path, Handler handler,
              BodyUse body = BodyUse::kRead);

  // Binds, listens and starts the I/O threads. Throws std::runtime_error naming the address when
  // it cannot listen there (in use, not local), or the file when a TLS file cannot be loaded;
  // std::logic_error when called twice.
  void Start();

  // The port listened on (the one the system chose when asked for port 0); 0 before Start().
  std::uint16_t port() const;

  // Connections open now, including those being closed.
  std::size_t open_connections() const;
  // Connections closed to make room for new ones at max_connections, since Start().
  std::uint64_t evicted_connections() const;
  // TLS handshakes that did not complete (refused, malformed, timed out, given up by the client, or
  // cut for a new connection at the cap), and client certificates past PeerCertificate's bounds,
  // since Start(): each closes its connection without a log line above debug.
  std::uint64_t handshake_failures() const;
  // Requests answered 503 because their bodies would have passed max_body_bytes_in_flight, since
  // Start(); and the body bytes held now.
  std::uint64_t shed_requests() const;
  std::size_t body_bytes_in_flight() const;

  // Stops gracefully: closes the listener; answers every deferred request still waiting with 503
  // (its Later's OnAbandon hears kStopping); lets answers being made or sent finish, closing each
  // connection after its answer (idle ones at once); after drain_timeout closes what is left; and
  // joins the I/O threads. Idempotent. Must not be called from a handler.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eoc::server
