// The Direct access mode: plain HTTP/1.1 to the pod's IP and metrics port (Boost.Beast on a small
// Asio thread pool). Each fetch is one connection (`Connection: close`): connect, one GET, read the
// answer, close.
//
//   eoc::controller::DirectFetcher fetcher({.threads = 1, .max_in_flight = 64});
//   fetcher.Fetch({.pod = "prod/vllm-0", .address = "10.1.2.3:8000"}, on_done);
//   // The destructor calls back every fetch not yet done with kCancelled, then returns.
//
// Bounds: at most max_in_flight connections open at once (more fetches wait in a queue of at most
// max_queued; past it they fail at once with kOverloaded); each fetch's timeout is one deadline
// over connect, request and the whole answer (Beast's tcp_stream expiry, so an answer that trickles
// in is cut at the deadline, not after a pause); headers over header_limit and bodies over
// body_limit are refused as soon as the parser sees them (a Content-Length over the limit before
// any of the body is read; a chunked or unsized body once the limit is passed), so memory stays
// near the limits. Sent: `Accept: text/plain;version=0.0.4` (the Prometheus text format) and a
// User-Agent naming eoc-operator. Addresses are IP literals (pods are reached by IP); no name
// lookups.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "controller/scrape/metrics_fetcher.h"

namespace eoc::controller {

inline constexpr const char* kPrometheusTextAccept = "text/plain;version=0.0.4";
inline constexpr const char* kScrapeUserAgent = "eoc-operator/0.1 (metrics scrape)";

struct DirectFetcherOptions {
  // I/O threads. One carries 1,000 fetches per 5 s interval with room to spare
  // (bench/results/scrape_fetch.md); callbacks run on them.
  int threads = 1;
  // Connections open at once.
  std::size_t max_in_flight = 64;
  // Fetches waiting for a connection slot; more fail at once with kOverloaded.
  std::size_t max_queued = 10'000;
  // The biggest page accepted. A real vLLM page is tens to a few hundred KB (its histograms per
  // model and LoRA adapter); 4 MiB leaves an order of magnitude of room and still bounds memory at
  // max_in_flight x 4 MiB in the worst case.
  std::size_t body_limit = std::size_t{4} << 20;
  // Status line and headers together.
  std::size_t header_limit = std::size_t{64} << 10;
  std::string user_agent = kScrapeUserAgent;
};

class DirectFetcher final : public MetricsFetcher {
 public:
  // Starts the I/O threads. Throws std::invalid_argument for threads or a limit below 1.
  explicit DirectFetcher(DirectFetcherOptions options = {});
  // Closes every connection, calls back each fetch not yet done with kCancelled, joins the threads.
  ~DirectFetcher() override;
  DirectFetcher(const DirectFetcher&) = delete;
  DirectFetcher& operator=(const DirectFetcher&) = delete;
  DirectFetcher(DirectFetcher&&) = delete;
  DirectFetcher& operator=(DirectFetcher&&) = delete;

  void Fetch(FetchRequest request, Callback done) override;

  // Connections open now (at most max_in_flight), and fetches waiting for one.
  std::size_t in_flight() const;
  std::size_t queued() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eoc::controller
