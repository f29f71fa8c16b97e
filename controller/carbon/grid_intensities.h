// Each pool's zone intensities (gCO2e/kWh) from its spec.carbon source, as the reconcile reads
// them: from the `static` map, from a watched ConfigMap, or from a Carbon Aware SDK that an
// SdkPoller polls on its own thread. Nothing here waits on the network.
//
//   GridIntensities grid(client, *sdk_fetcher, {}, RealClock(),
//                        [&](const std::string& pool) { queue.Add(pool); });
//   grid.Start();
//   ZoneReadings r = grid.Track("prod/chat", pool, {"eastus", "westus"});
//   r.intensity;   // {"eastus": 70}: what CarbonWeighted and the gCO2e gauges use
//   r.errors;      // {"westus", "GET http://...: connection refused", ...}: the condition's words
//   grid.Forget("prod/chat");
//
// Each pool has a table of its own with its hold (spec.carbon.maxStaleSeconds): a ConfigMap is
// read into it on every Track (its values are as new as the read), the SDK's readings are taken
// into it with the time they were polled. A failing source (a deleted ConfigMap, a removed key, a
// refused value, an SDK that errs) leaves the last good value in use for the hold. A ConfigMap is
// watched (a list and watch of that one object, by field selector) while a pool refers to it; an
// SDK URL is polled while a pool uses it. When either changes, `changed` is called with each pool
// that uses it, on the informer's or the poller's thread.
//
// Each namespace's pools may name at most max_sdk_urls_per_namespace distinct SDK URLs and
// max_config_maps_per_namespace distinct ConfigMaps (common/namespace_cap.h): a pool whose source
// would pass its namespace's cap is neither polled nor watched, and its readings say so
// (ZoneReadings::refused), naming the cap's flag; it is taken at a later Track once there is room.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "api/inference_pool.h"
#include "common/clock.h"
#include "common/namespace_cap.h"
#include "controller/carbon/config_map_intensities.h"
#include "controller/carbon/sdk_poller.h"
#include "controller/scrape/metrics_fetcher.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/shared_informers.h"
#include "signals/carbon_intensity.h"

namespace eoc::controller::carbon {

// What a pool's zones weigh now.
struct ZoneReadings {
  std::map<std::string, double> intensity;          // zone -> gCO2e/kWh: the usable ones
  std::vector<signals::ZoneIntensityError> errors;  // zones without one, and why; by zone
  // Zones whose source fails but whose last good value is still used (within the hold); by zone.
  std::vector<signals::ZoneIntensityError> held;
  std::vector<std::string> pending;  // zones the source has not answered for yet; sorted
  // Why the pool's source is not read at all (its namespace is at a cap); empty when it is.
  std::string refused;

  bool operator==(const ZoneReadings&) const = default;
};

// `zones` as spec.carbon.static gives them: each zone it lists, and an error for the others.
ZoneReadings StaticReadings(const api::CarbonSpec& carbon, std::span<const std::string> zones,
                            signals::SteadyTime now);

// What the reconcile asks; thread-safe.
class GridSource {
 public:
  virtual ~GridSource() = default;
  // The intensities of `zones` (the zones of the pool's workers, in any order, repeats allowed)
  // now, from pool.spec.carbon's source, which this starts (or goes on) watching or polling for
  // the pool.
  virtual ZoneReadings Track(const std::string& pool_key, const api::InferencePool& pool,
                             std::span<const std::string> zones) = 0;
  // The pool is gone: its table goes, and its ConfigMap or URL when no other pool uses it.
  virtual void Forget(const std::string& pool_key) = 0;
};

struct GridIntensitiesOptions {
  // The SDK's: each URL and zone set asked at most this often, each poll within `sdk_timeout`.
  std::chrono::seconds sdk_poll_interval = signals::kMinCarbonPollInterval;
  std::chrono::milliseconds sdk_timeout = kCarbonFetchTimeout;
  // SDK polls in flight at once (the poller's threads; the fetcher given should allow as many).
  std::size_t sdk_max_in_flight = kCarbonMaxInFlight;
  // Distinct SDK URLs, and ConfigMaps, that the pools of one namespace may use.
  std::size_t max_sdk_urls_per_namespace = 4;
  std::size_t max_config_maps_per_namespace = 4;
  // Resolves the SDK's host names; empty: ResolveHost.
  Resolver resolve;
  // Refused addresses the SDKs may be reached at nonetheless (--carbon-sdk-allowed-cidrs;
  // sdk_address.h).
  std::vector<Cidr> sdk_allowed_cidrs;
  // The ConfigMap watches' reflector hooks (failed lists and watches: logged, counted); null:
  // none. Called from every watch's thread; must outlive this.
  kube::ReflectorMetrics* config_map_metrics = nullptr;
};

class GridIntensities final : public GridSource {
 public:
  using Changed = std::function<void(const std::string& pool_key)>;

  // `client`, `sdk_fetcher` and `clock` must outlive this; `changed` may be empty.
  GridIntensities(kube::Client& client, MetricsFetcher& sdk_fetcher,
                  const GridIntensitiesOptions& options, const Clock& clock, Changed changed);
  ~GridIntensities() override;  // Stop()s
  GridIntensities(const GridIntensities&) = delete;
  GridIntensities& operator=(const GridIntensities&) = delete;
  GridIntensities(GridIntensities&&) = delete;
  GridIntensities& operator=(GridIntensities&&) = delete;

  // The SDK poller's thread (ConfigMap watches start as pools ask for them).
  void Start();
  // Ends the watches and the poller (within the SDK timeout, when a poll is in flight).
  void Stop();

  ZoneReadings Track(const std::string& pool_key, const api::InferencePool& pool,
                     std::span<const std::string> zones_asked) override;
  void Forget(const std::string& pool_key) override;

 private:
  using Watch = kube::Informer<IntensityConfigMap>;
  struct PoolTrack {
    std::string config_map;          // "namespace/name" of spec.carbon.configMapRef, else ""
    std::string sdk_url;             // spec.carbon.carbonAwareSdk.url, else ""
    std::vector<std::string> zones;  // sorted, distinct
    signals::ZoneIntensities table;
  };

  // Under mu_, when a pool's source or zones change (not on every Track): the SDK's wanted set
  // from every pool's zones.
  void WantSdkLocked();
  // A started watch of the ConfigMap `name` in `ns`, whose changes notify the pools that read it.
  std::unique_ptr<Watch> MakeWatch(const std::string& ns, const std::string& name);
  // Calls `changed` for every pool that reads `config_map` (or, when empty, `sdk_url`).
  void NotifyPools(const std::string& config_map, const std::string& sdk_url);

  kube::Client& client_;
  kube::ReflectorMetrics* const config_map_metrics_;
  const Clock& clock_;
  const Changed changed_;
  SdkPoller poller_;

  mutable std::mutex mu_;
  bool stopped_ = false;                    // guarded by mu_
  std::map<std::string, PoolTrack> pools_;  // by pool key; guarded by mu_
  // The ConfigMap watches by "ns/name", the pools by key; guarded by mu_.
  kube::SharedInformers<IntensityConfigMap> watches_;
  NamespaceCap sdk_urls_;     // guarded by mu_
  NamespaceCap config_maps_;  // guarded by mu_
};

}  // namespace eoc::controller::carbon
