// The APIServerProxy access mode, for a controller running outside the cluster: GET
// /api/v1/namespaces/{ns}/pods/{name}:{port}/proxy/{path} through the API server, with the kube
// client's TLS and credentials.
//
//   auto fetcher = eoc::controller::ApiServerProxyFetcher::Create(rest_config, {.qps = 250});
//   fetcher->Fetch({.pod = "prod/vllm-0", .address = "10.1.2.3:8000", .path = "/metrics"},
//                  on_done);
//
// It has a kube::Client of its own, so its client-side rate limit (the client's TokenBucket) and
// its connections are apart from the controller's other calls: 1,000 workers every 5 s are 200
// requests a second, far past the controller's 20 QPS. Its client never retries (a Retry-After
// wait would outlast the scrape) and caps an answer at body_limit.
//
// The deadline: cpprestsdk's timeout is an inactivity timer, so the fetch's timeout goes to the
// transport as HttpRequest::deadline, which cancels the request when it passes, whether it waits
// for the headers or the body trickles in. It runs from when the call leaves the rate limiter; the
// wait for a rate-limit turn is not counted (as a DirectFetcher's wait for a connection slot). The
// cut is as exact as cpprestsdk's cancellation: it closes the connection at once.
//
// The kube client is synchronous, so fetches run on `threads` threads of the fetcher's own: that
// many at once, more wait in a queue. The destructor cancels queued fetches (kCancelled) and waits
// for the running ones, each bounded by its rate-limit turn and its deadline.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/scrape/metrics_fetcher.h"
#include "kube/client.h"
#include "kube/config.h"

namespace eoc::controller {

struct ApiServerProxyFetcherOptions {
  // The fetcher's own rate limit on the API server (1,000 workers / 5 s = 200/s, and room).
  double qps = 250;
  int burst = 250;
  // Fetches at once (threads blocked in a call); more wait in a queue of at most max_queued.
  int threads = 16;
  std::size_t max_queued = 10'000;
  // The biggest page accepted (as DirectFetcherOptions::body_limit).
  std::size_t body_limit = std::size_t{4} << 20;
};

// The options of the client an ApiServerProxyFetcher needs: its rate limit, no retries, the body
// limit, the scrape's User-Agent.
kube::ClientOptions ProxyClientOptions(const ApiServerProxyFetcherOptions& options);

class ApiServerProxyFetcher final : public MetricsFetcher {
 public:
  // `client` is the fetcher's own, made with ProxyClientOptions(options) (a test's scripted one).
  // Throws std::invalid_argument for threads below 1.
  ApiServerProxyFetcher(std::unique_ptr<kube::Client> client, ApiServerProxyFetcherOptions options);
  // For a loaded config: a client of its own over cpprestsdk, on the system clock.
  static std::unique_ptr<ApiServerProxyFetcher> Create(const kube::RestConfig& config,
                                                       const ApiServerProxyFetcherOptions& options);
  ~ApiServerProxyFetcher() override;
  ApiServerProxyFetcher(const ApiServerProxyFetcher&) = delete;
  ApiServerProxyFetcher& operator=(const ApiServerProxyFetcher&) = delete;
  ApiServerProxyFetcher(ApiServerProxyFetcher&&) = delete;
  ApiServerProxyFetcher& operator=(ApiServerProxyFetcher&&) = delete;

  void Fetch(FetchRequest request, Callback done) override;

  // "/api/v1/namespaces/prod/pods/vllm-0:8000/proxy/metrics" for pod "prod/vllm-0", address
  // "10.1.2.3:8000", path "/metrics"; "" with *error set when the pod or port cannot be read.
  static std::string ProxyPath(const FetchRequest& request, std::string* error);

 private:
  struct Pending {
    FetchRequest request;
    Callback done;
  };
  void Run();
  FetchResult FetchOne(const FetchRequest& request);

  const ApiServerProxyFetcherOptions options_;
  std::unique_ptr<kube::Client> client_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;      // guarded by mu_
  std::deque<Pending> queue_;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace eoc::controller
