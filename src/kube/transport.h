// The HTTP exchange with the API server, behind a small interface so that the REST client above it
// can be tested with a fake of our own and the library below it (cpprestsdk) stays in one file.
//
//   auto transport = eoc::kube::MakeCpprestTransport(config, credentials, {});
//   eoc::kube::HttpResponse r = transport->Send({"GET", "/api/v1/namespaces", "", ""});
//   auto watch = transport->Stream({"GET", "/api/v1/pods?watch=1&timeoutSeconds=300", "", ""},
//                                  std::chrono::seconds(330));
//   while (auto line = watch.stream->NextLine()) { ... }
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "kube/config.h"
#include "kube/credentials.h"
#include "kube/json_limits.h"
#include "kube/status.h"

namespace eoc::kube {

struct HttpRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string path;    // path and query, already encoded: "/api/v1/pods?limit=500"
  std::string body;
  std::string content_type;  // of the body, when there is one
  std::string accept;        // the Accept header; empty: application/json
  // A limit on the whole exchange, from sending to the body's last byte (the request timeout below
  // only bounds silence, so an answer that trickles in would outlast it); zero: none. Past it the
  // request is cancelled and Send throws TransportError with reason Timeout. Stream ignores it.
  std::chrono::milliseconds deadline{0};
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
};

// A request that got no HTTP answer: it could not connect, TLS failed, it timed out, the answer
// was too large, or it was cancelled. `status()` has code 0 and one of the client-side reasons.
class TransportError : public std::runtime_error {
 public:
  TransportError(std::string reason, const std::string& message)
      : std::runtime_error(message), reason_(std::move(reason)) {}
  Status status() const { return Status{0, reason_, what(), std::nullopt}; }

 private:
  std::string reason_;
};

// The body of a streamed answer (a watch), read one line at a time.
class LineStream {
 public:
  virtual ~LineStream() = default;
  // The next line without its newline, or nullopt at the end of the stream (the server closed it,
  // or Cancel() was called). Throws TransportError on an idle timeout, a broken connection, or a
  // line longer than the limit.
  virtual std::optional<std::string> NextLine() = 0;
  // Ends the stream from any thread; a NextLine() blocked in another thread returns promptly.
  virtual void Cancel() = 0;
};

// A streamed request's outcome: a 2xx answer gives `stream`; any other gives `response`, whose
// (bounded) body holds the error.
struct StreamResult {
  HttpResponse response;
  std::unique_ptr<LineStream> stream;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends one request and reads the whole answer. Throws TransportError when no answer came.
  virtual HttpResponse Send(const HttpRequest& request) = 0;
  // Sends one request and returns as soon as the answer's headers arrive. `idle_timeout` bounds
  // the silence between two reads of the body (a watch must set it longer than its
  // timeoutSeconds, since a quiet watch may send nothing until its end).
  virtual StreamResult Stream(const HttpRequest& request,
                              std::chrono::milliseconds idle_timeout) = 0;
};

struct TransportOptions {
  // Inactivity limit for ordinary requests (cpprestsdk's timeout restarts on every read).
  std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
  // Bounds on what the server may send: a whole answer, and one line of a stream.
  std::size_t max_response_bytes = kMaxApiResponseBytes;
  std::size_t max_line_bytes = kMaxApiLineBytes;
  // TCP keepalive, so that a silently dead connection is noticed long before a watch's idle
  // timeout: first probe after `keepalive_idle`, then every `keepalive_interval`, `keepalive_count`
  // probes.
  std::chrono::seconds keepalive_idle{30};
  std::chrono::seconds keepalive_interval{10};
  int keepalive_count = 3;
  std::string user_agent = "eoc-operator/0.1";
};

// The production transport: cpprestsdk's http_client, TLS verified against the config's CA alone
// (or the system's roots when it names none), bearer tokens and client certificates from
// `credentials`, one retry after a 401 with refreshed credentials.
std::unique_ptr<Transport> MakeCpprestTransport(const RestConfig& config,
                                                std::shared_ptr<CredentialSource> credentials,
                                                const TransportOptions& options);

}  // namespace eoc::kube
