// Fetching workers' Prometheus pages: the I/O half of scraping (the text is parsed in src/signals).
// One interface, two ways to reach a pod (spec.metrics.access): DirectFetcher connects to the pod's
// IP (direct_fetcher.h); ApiServerProxyFetcher goes through the API server's pods/proxy
// (apiserver_proxy_fetcher.h). Both are asynchronous with bounded concurrency, so that one replica
// scrapes 1,000 workers every interval without a thread per worker, and a hung, trickling, huge or
// malformed endpoint fails its own fetch within its deadline and holds up no other.
//
//   eoc::controller::DirectFetcher fetcher({.max_in_flight = 64});
//   fetcher.Fetch({.pod = "prod/vllm-0", .address = "10.1.2.3:8000", .path = "/metrics",
//                  .timeout = std::chrono::seconds(2)},
//                 [](eoc::controller::FetchResult r) {
//                   if (r.ok()) Parse(r.body);
//                   else log(r.error->message);   // "GET 10.1.2.3:8000/metrics: deadline of ..."
//                 });
//   // Or a whole round, returning when every target has been called back:
//   FetchAll(fetcher, requests, [&](std::size_t i, eoc::controller::FetchResult r) { ... });
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/enum_name.h"

namespace eoc::controller {

// What one fetch is after. A fetch's deadline runs from when it starts (it has its connection
// slot, or its rate-limit turn): waiting for one is not counted, so a round of targets behind a few
// hung ones still gets each its full timeout. A round of N fetches with max_in_flight M takes at
// most about ceil(N / M) x timeout.
struct FetchRequest {
  std::string pod;      // "namespace/name": ApiServerProxyFetcher's target; in messages for both
  std::string address;  // "ip:port" (IPv6 in brackets): DirectFetcher connects here; the proxy
                        // takes the port from it
  std::string host;     // DirectFetcher's Host header when not empty (a name the caller resolved
                        // to `address`); else `address`
  std::string path = "/metrics";                               // with its query, if any
  std::chrono::milliseconds timeout{std::chrono::seconds(2)};  // the whole fetch: connect to body
};

enum class FetchErrorKind {
  kDeadline,        // the timeout passed (connecting, waiting, or while the answer trickled in)
  kConnectRefused,  // nothing listens there (through the proxy: the API server says so)
  kTooLarge,        // headers or body over the fetcher's limit; reading stopped there
  kHttpStatus,      // an answer that is not 2xx (http_status says which)
  kMalformed,       // an answer that is not HTTP
  kTransport,       // anything else on the way: reset, closed early, unreachable, bad address
  kCancelled,       // the fetcher was destroyed first
  kOverloaded,      // the fetcher's queue was full: not attempted
};

// Names for logs and metric labels ("deadline", "connect-refused", ...).
inline constexpr std::array<EnumName<FetchErrorKind>, 8> kFetchErrorKindNames{{
    {FetchErrorKind::kDeadline, "deadline"},
    {FetchErrorKind::kConnectRefused, "connect-refused"},
    {FetchErrorKind::kTooLarge, "too-large"},
    {FetchErrorKind::kHttpStatus, "http-status"},
    {FetchErrorKind::kMalformed, "malformed"},
    {FetchErrorKind::kTransport, "transport"},
    {FetchErrorKind::kCancelled, "cancelled"},
    {FetchErrorKind::kOverloaded, "overloaded"},
}};
inline std::string_view KindName(FetchErrorKind kind) {
  return EnumToString(kind, kFetchErrorKindNames);
}

struct FetchError {
  FetchErrorKind kind = FetchErrorKind::kTransport;
  int http_status = 0;  // for kHttpStatus (and the proxy's own refusals)
  std::string message;  // names the target and what went wrong
};

struct FetchResult {
  std::optional<FetchError> error;  // nullopt: success, `body` is the page
  std::string body;
  // Bytes read from the connection, headers included (DirectFetcher; the proxy reports the body's
  // size). A fetch over the limit shows here that reading stopped near the limit.
  std::size_t bytes_read = 0;

  bool ok() const { return !error.has_value(); }
};

class MetricsFetcher {
 public:
  // Called exactly once per Fetch, on one of the fetcher's threads (or, for a fetch refused at
  // once, on the caller's). It must be quick: hand the body to a parser's queue, do not parse in
  // it. It must not destroy the fetcher.
  using Callback = std::function<void(FetchResult)>;

  virtual ~MetricsFetcher() = default;
  // Starts one fetch, or queues it while max_in_flight are running. Thread-safe; never blocks.
  virtual void Fetch(FetchRequest request, Callback done) = 0;
};

// For implementations: calls `done` with `result`; a callback that throws (the caller's bug, which
// would otherwise end a fetcher's thread) is logged.
void Deliver(const MetricsFetcher::Callback& done, FetchResult result);

// Fetches every request through `fetcher` and calls `on_each(index, result)` as each completes (in
// completion order, on the fetcher's threads, one at a time); returns when all have been called.
void FetchAll(MetricsFetcher& fetcher, std::span<const FetchRequest> requests,
              const std::function<void(std::size_t, FetchResult)>& on_each);

}  // namespace eoc::controller
