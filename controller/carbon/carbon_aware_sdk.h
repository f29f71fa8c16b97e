// Grid intensity from a Carbon Aware SDK WebAPI (spec.carbon.carbonAwareSdk.url): one
// `GET {url}/emissions/bylocations?location=A&location=B` per poll, each zone a `location`
// parameter, through a MetricsFetcher (a DirectFetcher made by MakeCarbonFetcher: one deadline
// over the whole fetch, the body limit of kMaxEmissionsAnswerBytes), read by
// ParseEmissionsByLocations, and kept in a signals::ZoneIntensities (the last good value held for
// a bounded time) with at most one poll per signals::PollSchedule interval per URL and zone set.
//
//   auto fetcher = eoc::controller::carbon::MakeCarbonFetcher();
//   eoc::controller::carbon::CarbonAwareSdkSource sdk(*fetcher, {});
//   sdk.Poll("http://10.96.0.20:8080", {"eastus", "westus"}, clock.Now());  // blocks <= timeout
//   sdk.intensities().Get("eastus", clock.Now());      // 70, or nullopt past the hold
//   sdk.intensities().Errors(clock.Now());             // zones without a value, and why
//
// The URL: http:// only (the fetcher speaks plain HTTP; https is refused with a message saying
// so), with an optional path prefix, no query or fragment. The host is an IP address or a name;
// a name is looked up (getaddrinfo) within the same deadline before every poll. Every address it
// resolves to must pass CheckSdkAddress (sdk_address.h: no loopback, link-local, unspecified or
// cloud metadata address unless options.allowed_cidrs holds it), else the poll is refused naming
// the address; the fetcher then connects to the first address, the one checked (it looks nothing
// up itself), and sends the URL's host and port as the Host header. So the address is pinned: a
// name re-pointed after the check cannot move the connection. (No TLS, so no SNI to keep.)
// The request is sent with the fetcher's `Accept` (the Prometheus text type): the SDK's ASP.NET
// Core WebAPI answers JSON whatever Accept says (it does not return 406 by default).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "controller/carbon/emissions_answer.h"
#include "controller/carbon/sdk_address.h"
#include "controller/scrape/metrics_fetcher.h"
#include "signals/carbon_intensity.h"

namespace eoc::controller::carbon {

// One poll's whole deadline (name lookup, connect, request, answer). The SDK answers from its
// provider's cache or after one call to it; 10 s is generous and still far below the poll interval.
inline constexpr std::chrono::milliseconds kCarbonFetchTimeout = std::chrono::seconds(10);
// Zones in one request: the URL stays well under the 8 KiB request line servers accept.
inline constexpr std::size_t kMaxZonesPerRequest = 64;

// RFC 3986 percent-encoding of a query value: everything but ALPHA, DIGIT and "-._~".
std::string UrlEscape(std::string_view value);

// Splits the base URL: "ip-or-name:port" (port 80 when absent) and the request path
// "{prefix}/emissions/bylocations?location=...". nullopt and *error for a URL that is not
// http://, has a query or fragment, no zones, or more than kMaxZonesPerRequest.
struct EmissionsTarget {
  std::string authority;  // host[:port] as the URL gives it: the Host header
  std::string host;       // without brackets
  std::uint16_t port = 80;
  std::string path;
};
std::optional<EmissionsTarget> EmissionsRequestTarget(std::string_view base_url,
                                                      std::span<const std::string> zones,
                                                      std::string* error);

// Turns a host into its IP literals (at least one) within `timeout`; nullopt and *error when it
// cannot.
using Resolver = std::function<std::optional<std::vector<std::string>>(
    const std::string& host, std::chrono::milliseconds timeout, std::string* error)>;
// An IP literal as it is; a name through getaddrinfo on a helper thread, waited for at most
// `timeout` (a lookup that takes longer is abandoned: the thread ends on its own when it returns):
// every address it gives, in its order, each once.
std::optional<std::vector<std::string>> ResolveHost(const std::string& host,
                                                    std::chrono::milliseconds timeout,
                                                    std::string* error);

// A DirectFetcher for the SDK: one thread, `max_in_flight` connections (as many as the polls in
// flight, so that none waits in the fetcher's queue behind a hung one), the answer's body limit.
std::unique_ptr<MetricsFetcher> MakeCarbonFetcher(std::size_t max_in_flight = 8);

struct CarbonAwareSdkOptions {
  std::chrono::milliseconds timeout = kCarbonFetchTimeout;
  std::chrono::seconds min_interval = signals::kMinCarbonPollInterval;
  std::chrono::seconds hold = signals::kDefaultCarbonHold;
  Resolver resolve = ResolveHost;
  // Refused addresses the SDK may be reached at nonetheless (--carbon-sdk-allowed-cidrs).
  std::vector<Cidr> allowed_cidrs;
};

// One GET and its reading: the answer, or (in `error`) why there is none, naming the URL.
EmissionsAnswer FetchEmissions(MetricsFetcher& fetcher, std::string_view base_url,
                               std::span<const std::string> zones,
                               const CarbonAwareSdkOptions& options);

// The polled source: not thread-safe (one reconcile loop owns it).
class CarbonAwareSdkSource {
 public:
  CarbonAwareSdkSource(MetricsFetcher& fetcher, CarbonAwareSdkOptions options);

  // Fetches when this URL and zone set is due at `now` (blocking for at most the timeout) and
  // records each zone's rating or error at `now`; returns whether it fetched. Zones no longer
  // asked for are dropped from the table.
  bool Poll(std::string_view base_url, std::span<const std::string> zones, signals::SteadyTime now);

  const signals::ZoneIntensities& intensities() const { return intensities_; }
  // Whether the last fetch got an answer that could be read (some zones may still be missing).
  bool answered() const { return answered_; }
  const signals::PollSchedule& schedule() const { return schedule_; }

 private:
  MetricsFetcher& fetcher_;
  CarbonAwareSdkOptions options_;
  signals::ZoneIntensities intensities_;
  signals::PollSchedule schedule_;
  bool answered_ = false;
};

}  // namespace eoc::controller::carbon
