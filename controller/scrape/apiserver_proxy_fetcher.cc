#include "controller/scrape/apiserver_proxy_fetcher.h"

#include <stdexcept>

#include "common/url.h"
#include "controller/scrape/direct_fetcher.h"
#include "kube/status.h"

namespace eoc::controller {
namespace {

std::string Describe(const FetchRequest& r) {
  return "GET pods/proxy " + r.pod + " port of " + r.address + r.path;
}

FetchResult Failure(FetchErrorKind kind, int http_status, std::string message) {
  FetchResult r;
  r.error = FetchError{kind, http_status, std::move(message)};
  return r;
}

// The client's Status in the fetcher's terms. The API server answers a pod that refuses the
// connection with 503 "error trying to reach service: dial tcp IP:PORT: connect: connection
// refused" (its proxy's error responder): that is the pod's refusal, not the API server's.
FetchErrorKind KindOf(const kube::Status& s) {
  if (s.code == 0) {
    if (s.reason == kube::kReasonTimeout) return FetchErrorKind::kDeadline;
    if (s.reason == kube::kReasonTooLarge) return FetchErrorKind::kTooLarge;
    if (s.reason == kube::kReasonCancelled) return FetchErrorKind::kCancelled;
    return FetchErrorKind::kTransport;
  }
  if (s.code == 503 && s.message.find("connection refused") != std::string::npos) {
    return FetchErrorKind::kConnectRefused;
  }
  return FetchErrorKind::kHttpStatus;
}

}  // namespace

kube::ClientOptions ProxyClientOptions(const ApiServerProxyFetcherOptions& options) {
  kube::ClientOptions o;
  o.qps = options.qps;
  o.burst = options.burst;
  o.max_retries = 0;  // a Retry-After wait would outlast the scrape: the next interval retries
  o.transport.max_response_bytes = options.body_limit;
  o.transport.user_agent = kScrapeUserAgent;
  return o;
}

ApiServerProxyFetcher::ApiServerProxyFetcher(std::unique_ptr<kube::Client> client,
                                             ApiServerProxyFetcherOptions options)
    : options_(options), client_(std::move(client)) {
  if (options_.threads < 1) {
    throw std::invalid_argument("ApiServerProxyFetcher: threads must be at least 1");
  }
  threads_.reserve(static_cast<std::size_t>(options_.threads));
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { Run(); });
}

std::unique_ptr<ApiServerProxyFetcher> ApiServerProxyFetcher::Create(
    const kube::RestConfig& config, const ApiServerProxyFetcherOptions& options) {
  return std::make_unique<ApiServerProxyFetcher>(
      kube::Client::Create(config, ProxyClientOptions(options)), options);
}

ApiServerProxyFetcher::~ApiServerProxyFetcher() {
  std::deque<Pending> queued;
  {
    const std::lock_guard lock(mu_);
    stopping_ = true;
    queued.swap(queue_);
  }
  wake_.notify_all();
  for (Pending& p : queued) {
    Deliver(p.done,
            Failure(FetchErrorKind::kCancelled, 0, Describe(p.request) + ": the fetcher stopped"));
  }
  for (auto& t : threads_) t.join();
}

void ApiServerProxyFetcher::Fetch(FetchRequest request, Callback done) {
  std::optional<FetchResult> refused;
  {
    const std::lock_guard lock(mu_);
    if (stopping_) {
      refused = Failure(FetchErrorKind::kCancelled, 0, Describe(request) + ": the fetcher stopped");
    } else if (queue_.size() >= options_.max_queued) {
      refused = Failure(FetchErrorKind::kOverloaded, 0,
                        Describe(request) + ": the queue of " +
                            std::to_string(options_.max_queued) + " fetches is full");
    } else {
      queue_.push_back({std::move(request), std::move(done)});
      done = nullptr;
    }
  }
  if (refused) {
    Deliver(done, std::move(*refused));
  } else {
    wake_.notify_one();
  }
}

void ApiServerProxyFetcher::Run() {
  for (;;) {
    Pending p;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;  // the destructor cancels what is queued
      p = std::move(queue_.front());
      queue_.pop_front();
    }
    Deliver(p.done, FetchOne(p.request));
  }
}

FetchResult ApiServerProxyFetcher::FetchOne(const FetchRequest& request) {
  std::string error;
  const std::string path = ProxyPath(request, &error);
  if (path.empty()) {
    return Failure(FetchErrorKind::kTransport, 0, Describe(request) + ": " + error);
  }
  auto body = client_->GetText(path, kPrometheusTextAccept, request.timeout);
  if (!body) {
    const kube::Status& s = body.error();
    return Failure(KindOf(s), s.code, Describe(request) + ": " + s.ToString());
  }
  FetchResult r;
  r.bytes_read = body->size();
  r.body = std::move(body).value();
  return r;
}

std::string ApiServerProxyFetcher::ProxyPath(const FetchRequest& request, std::string* error) {
  const auto slash = request.pod.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == request.pod.size() ||
      request.pod.find('/', slash + 1) != std::string::npos) {
    *error = "the pod is not \"namespace/name\"";
    return "";
  }
  const auto hp = SplitHostPort(request.address, error);
  if (!hp) return "";
  if (!hp->port || *hp->port == 0) {
    *error = "the address has no port";
    return "";
  }
  if (request.path.empty() || request.path.front() != '/') {
    *error = "the path does not start with '/'";
    return "";
  }
  return "/api/v1/namespaces/" + request.pod.substr(0, slash) + "/pods/" +
         request.pod.substr(slash + 1) + ":" + std::to_string(*hp->port) + "/proxy" + request.path;
}

}  // namespace eoc::controller
