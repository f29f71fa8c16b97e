// The Kubernetes REST client: typed paths, JSON bodies, decoded errors, a client-side rate limit
// and Retry-After on 429, over any Transport.
//
//   auto client = eoc::kube::Client::Create(eoc::kube::LoadConfig(opts), {});
//   using eoc::kube::resources::kDeployments;
//   auto scale = client->GetScale(kDeployments, "default", "web");
//   if (!scale) log(scale.error().ToString());
//   client->SetReplicas(kDeployments, "default", "web", 5);
//   auto page = client->List(eoc::kube::resources::kPods, "default", {.label_selector =
//   "app=web"});
//
// Every call returns a Result: the value, or a Status (the API server's metav1.Status, or a
// client-side failure with code 0). Nothing here throws for an API or network failure.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"
#include "kube/config.h"
#include "kube/rate_limiter.h"
#include "kube/status.h"
#include "kube/transport.h"
#include "kube/types.h"

namespace eoc::kube {

struct ClientOptions {
  // Client-side rate limit on every call (controller-runtime's defaults).
  double qps = 20;
  int burst = 30;
  // How often a 429 (or 5xx) answer that carries Retry-After is retried, and the longest wait
  // honoured for one retry (client-go: 10 retries).
  int max_retries = 10;
  std::chrono::seconds max_retry_after{60};
  TransportOptions transport;
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::int64_t limit = 0;  // 0: no paging
  std::string continue_token;
  std::string resource_version;  // "" (most recent, from etcd), "0" (any, from the cache)
  // For Watch: the server ends the watch after this many seconds; bookmarks on request.
  std::int64_t timeout_seconds = 0;
  bool allow_watch_bookmarks = false;
};

struct DeleteOptions {
  std::optional<std::int64_t> grace_period_seconds;
  std::string propagation_policy;  // "", "Foreground", "Background", "Orphan"
  std::string precondition_uid;
};

enum class PatchType { kMerge, kJson, kStrategicMerge };

// A watch in progress: events in order until the server ends it (nullopt), Stop() is called, or
// an error. An ERROR event (for example 410 Expired) is returned as an event, not thrown.
class Watch {
 public:
  explicit Watch(std::unique_ptr<LineStream> stream) : stream_(std::move(stream)) {}
  // The next event, nullopt at the end, or a Status for a broken stream or an undecodable line.
  Result<std::optional<WatchEvent>> Next();
  // From any thread: makes a Next() blocked in another thread return nullopt promptly.
  void Stop() { stream_->Cancel(); }

 private:
  std::unique_ptr<LineStream> stream_;
};

class Client {
 public:
  // Rate-limit and Retry-After waits are on `clock` (a unit test's ManualClock: no real time).
  Client(std::unique_ptr<Transport> transport, const ClientOptions& options, const Clock& clock);

  // The production client for a loaded config (cpprestsdk transport, the system clock).
  static std::unique_ptr<Client> Create(const RestConfig& config, const ClientOptions& options);

  Result<nlohmann::json> Get(const ResourceRef& r, const std::string& ns, const std::string& name,
                             const std::string& subresource = "");
  // One page; options.limit and options.continue_token page through a large collection.
  Result<ListPage> List(const ResourceRef& r, const std::string& ns, const ListOptions& options);
  // Every page, following `continue` until the end (options.limit sets the page size).
  Result<ListPage> ListAll(const ResourceRef& r, const std::string& ns, ListOptions options);
  // POST to the collection; with a subresource, POST to that subresource of the object the
  // body's metadata.name names (a pod's "binding", "eviction").
  Result<nlohmann::json> Create(const ResourceRef& r, const std::string& ns,
                                const nlohmann::json& object, const std::string& subresource = "");
  // PUT: the object's metadata.resourceVersion makes it conditional; a stale one answers 409.
  Result<nlohmann::json> Update(const ResourceRef& r, const std::string& ns,
                                const nlohmann::json& object, const std::string& subresource = "");
  Result<nlohmann::json> Patch(const ResourceRef& r, const std::string& ns, const std::string& name,
                               PatchType type, const nlohmann::json& patch,
                               const std::string& subresource = "");
  Result<nlohmann::json> Delete(const ResourceRef& r, const std::string& ns,
                                const std::string& name, const DeleteOptions& options = {});
  Result<std::unique_ptr<Watch>> StartWatch(const ResourceRef& r, const std::string& ns,
                                            const ListOptions& options);

  // The /scale subresource of any scalable resource.
  Result<Scale> GetScale(const ResourceRef& r, const std::string& ns, const std::string& name);
  Result<Scale> SetReplicas(const ResourceRef& r, const std::string& ns, const std::string& name,
                            std::int32_t replicas);

  // Any GET under the server root (discovery documents, /version); JSON answers only.
  Result<nlohmann::json> GetPath(const std::string& path);
  // A GET under the server root whose answer is text, not JSON (a pod's /metrics through
  // pods/proxy): the body as it came. `accept` is sent as the Accept header; `deadline` bounds the
  // whole exchange once the rate limiter has let the call go (zero: only the transport's inactivity
  // timeout), and past it the call fails with reason Timeout.
  Result<std::string> GetText(const std::string& path, const std::string& accept,
                              std::chrono::milliseconds deadline);

  // How long the server-side watch may run before the client gives up on a silent stream.
  static std::chrono::milliseconds WatchIdleTimeout(std::int64_t timeout_seconds);

 private:
  Result<HttpResponse> Call(const HttpRequest& request);
  Result<nlohmann::json> CallJson(const HttpRequest& request);
  // Waits for the rate limiter; after a retryable answer, also for its Retry-After.
  bool ShouldRetry(const HttpResponse& response, int attempt);
  void Sleep(std::chrono::nanoseconds d);

  std::unique_ptr<Transport> transport_;
  const ClientOptions options_;
  TokenBucket limiter_;
  Wakeup wake_;  // the waits above; nothing ends them early
};

}  // namespace eoc::kube
