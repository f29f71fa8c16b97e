#include "controller/carbon/carbon_aware_sdk.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "common/text.h"
#include "common/url.h"
#include "controller/scrape/direct_fetcher.h"

namespace eoc::controller::carbon {
namespace {

bool IsIpLiteral(const std::string& host) {
  std::array<unsigned char, sizeof(in6_addr)> buf{};
  return inet_pton(AF_INET, host.c_str(), buf.data()) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buf.data()) == 1;
}

// Every address getaddrinfo gives for `host`, as text, in its order, each once.
std::optional<std::vector<std::string>> LookUp(const std::string& host, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    *error = "cannot look up " + Quoted(host) + ": " + gai_strerror(rc);
    return std::nullopt;
  }
  std::vector<std::string> addresses;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    std::array<char, INET6_ADDRSTRLEN> text{};
    const void* addr = nullptr;
    if (a->ai_family == AF_INET) {
      addr = &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
    } else if (a->ai_family == AF_INET6) {
      addr = &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
    } else {
      continue;
    }
    if (inet_ntop(a->ai_family, addr, text.data(), text.size()) == nullptr) continue;
    std::string address(text.data());
    if (std::find(addresses.begin(), addresses.end(), address) == addresses.end()) {
      addresses.push_back(std::move(address));
    }
  }
  freeaddrinfo(found);
  if (addresses.empty()) {
    *error = "cannot look up " + Quoted(host) + ": no IPv4 or IPv6 address";
    return std::nullopt;
  }
  return addresses;
}

// A lookup's result, shared by the waiting caller and the helper thread (which may outlive it).
struct Lookup {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<std::vector<std::string>> addresses;
  std::string error;
};

bool Unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string Prefixed(std::string_view base_url, const std::string& error) {
  return "GET " + std::string(base_url) + "/emissions/bylocations: " + error;
}

EmissionsAnswer Refused(std::string error) {
  EmissionsAnswer a;
  a.error = std::move(error);
  return a;
}

}  // namespace

std::string UrlEscape(std::string_view value) {
  static constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (Unreserved(c)) {
      out += c;
    } else {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    }
  }
  return out;
}

std::optional<EmissionsTarget> EmissionsRequestTarget(std::string_view base_url,
                                                      std::span<const std::string> zones,
                                                      std::string* error) {
  const auto url = SplitHttpUrl(base_url);
  if (!url) {
    *error = "the URL " + Quoted(base_url) + " is not an http:// URL";
    return std::nullopt;
  }
  if (url->scheme != "http") {
    *error = "the URL " + Quoted(base_url) +
             " is https: only plain http:// is supported (the fetcher speaks no TLS)";
    return std::nullopt;
  }
  if (url->rest.find_first_of("?#") != std::string_view::npos) {
    *error = "the URL " + Quoted(base_url) + " has a query or fragment";
    return std::nullopt;
  }
  if (zones.empty()) {
    *error = "no zones to ask for";
    return std::nullopt;
  }
  if (zones.size() > kMaxZonesPerRequest) {
    *error = std::to_string(zones.size()) + " zones, over the limit of " +
             std::to_string(kMaxZonesPerRequest) + " per request";
    return std::nullopt;
  }
  std::string why;
  const auto hp = SplitHostPort(url->authority, &why);
  if (!hp || hp->host.empty()) {
    *error = "the URL " + Quoted(base_url) + " has a bad host: " + (hp ? "empty" : why);
    return std::nullopt;
  }
  EmissionsTarget t;
  t.authority = std::string(url->authority);
  t.host = std::string(hp->host);
  if (hp->port) {
    if (*hp->port == 0) {
      *error = "the URL " + Quoted(base_url) + " has port 0";
      return std::nullopt;
    }
    t.port = *hp->port;
  }
  std::string_view prefix = url->rest;
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  t.path = std::string(prefix) + "/emissions/bylocations";
  char sep = '?';
  for (const std::string& zone : zones) {
    t.path += sep;
    t.path += "location=";
    t.path += UrlEscape(zone);
    sep = '&';
  }
  return t;
}

std::optional<std::vector<std::string>> ResolveHost(const std::string& host,
                                                    std::chrono::milliseconds timeout,
                                                    std::string* error) {
  if (IsIpLiteral(host)) return std::vector<std::string>{host};
  auto state = std::make_shared<Lookup>();
  std::thread([state, host] {
    std::string why;
    auto addresses = LookUp(host, &why);
    const std::lock_guard lock(state->mu);
    state->addresses = std::move(addresses);
    state->error = std::move(why);
    state->done = true;
    state->cv.notify_all();
  }).detach();  // a lookup past the deadline is abandoned, not waited for
  std::unique_lock lock(state->mu);
  if (!state->cv.wait_for(lock, timeout, [&] { return state->done; })) {
    *error = "looking up " + Quoted(host) + " took longer than " + std::to_string(timeout.count()) +
             " ms";
    return std::nullopt;
  }
  if (!state->addresses) *error = state->error;
  return state->addresses;
}

std::unique_ptr<MetricsFetcher> MakeCarbonFetcher(std::size_t max_in_flight) {
  return std::make_unique<DirectFetcher>(DirectFetcherOptions{
      .threads = 1,
      .max_in_flight = max_in_flight,
      .max_queued = 64,
      .body_limit = kMaxEmissionsAnswerBytes,
      .header_limit = std::size_t{64} << 10,
      .user_agent = "eoc-operator/0.1 (carbon intensity)",
  });
}

EmissionsAnswer FetchEmissions(MetricsFetcher& fetcher, std::string_view base_url,
                               std::span<const std::string> zones,
                               const CarbonAwareSdkOptions& options) {
  std::string error;
  const auto target = EmissionsRequestTarget(base_url, zones, &error);
  if (!target) return Refused(Prefixed(base_url, error));
  const auto start = std::chrono::steady_clock::now();
  const auto ips = options.resolve(target->host, options.timeout, &error);
  if (!ips || ips->empty()) return Refused(Prefixed(base_url, error));
  // Every address is checked, so that which one a lookup gives first cannot matter; the one
  // connected to is then the checked one (the fetcher looks nothing up).
  for (const std::string& address : *ips) {
    if (std::string why = CheckSdkAddress(address, options.allowed_cidrs); !why.empty()) {
      return Refused(Prefixed(base_url, why));
    }
  }
  const std::string& ip = ips->front();
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  const auto left = std::max(options.timeout - spent, std::chrono::milliseconds(1));
  const bool v6 = ip.find(':') != std::string::npos;
  FetchRequest request{
      .pod = {},
      .address = (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(target->port),
      .host = target->authority,
      .path = target->path,
      .timeout = left,
  };
  std::promise<FetchResult> promise;
  auto result_future = promise.get_future();
  fetcher.Fetch(std::move(request), [&promise](FetchResult r) { promise.set_value(std::move(r)); });
  FetchResult result = result_future.get();  // the fetcher calls back within its deadline
  if (!result.ok()) return Refused(result.error->message);
  EmissionsAnswer answer = ParseEmissionsByLocations(result.body, zones);
  if (answer.error) answer.error = Prefixed(base_url, *answer.error);
  return answer;
}

CarbonAwareSdkSource::CarbonAwareSdkSource(MetricsFetcher& fetcher, CarbonAwareSdkOptions options)
    : fetcher_(fetcher),
      options_(std::move(options)),
      intensities_(options_.hold),
      schedule_(options_.min_interval) {}

bool CarbonAwareSdkSource::Poll(std::string_view base_url, std::span<const std::string> zones,
                                signals::SteadyTime now) {
  intensities_.RetainOnly(zones);
  const std::string key = signals::PollKey(base_url, zones);
  if (!schedule_.Due(key, now)) return false;
  schedule_.Attempted(key, now);
  const EmissionsAnswer answer = FetchEmissions(fetcher_, base_url, zones, options_);
  answered_ = !answer.error;
  for (const std::string& zone : zones) {
    if (answer.error) {
      intensities_.Fail(zone, *answer.error, now);
    } else if (const auto r = answer.ratings.find(zone); r != answer.ratings.end()) {
      intensities_.Update(zone, r->second, now);
    } else if (const auto m = answer.missing.find(zone); m != answer.missing.end()) {
      intensities_.Fail(zone, Prefixed(base_url, m->second), now);
    }
  }
  return true;
}

}  // namespace eoc::controller::carbon
