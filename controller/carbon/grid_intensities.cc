#include "controller/carbon/grid_intensities.h"

#include <algorithm>
#include <utility>

#include "api/defaults.h"
#include "api/spec_rules.h"
#include "kube/types.h"

namespace eoc::controller::carbon {
namespace {

// The longest hold a pool may ask for: what the SDK's tables keep, so that each pool can apply
// its own.
constexpr std::chrono::seconds kLongestHold{api::internal::rules::kMaxStaleSeconds.max};
static_assert(std::chrono::seconds(api::defaults::kCarbonMaxStaleSeconds) ==
                  signals::kDefaultCarbonHold,
              "the spec's default hold is the signals library's");

std::vector<std::string> Distinct(std::span<const std::string> zones) {
  std::vector<std::string> out(zones.begin(), zones.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The readings of `zones` in `table` at `now`.
ZoneReadings ReadingsOf(const signals::ZoneIntensities& table, std::span<const std::string> zones,
                        signals::SteadyTime now) {
  ZoneReadings out;
  for (const std::string& zone : zones) {
    const signals::ZoneReading* reading = table.Reading(zone);
    if (const auto v = table.Get(zone, now)) {
      out.intensity.emplace(zone, *v);
      if (reading->error) {
        out.held.push_back(
            {.zone = zone, .error = *reading->error, .failed_at = reading->error_at});
      }
    } else if (reading == nullptr) {
      out.pending.push_back(zone);
    }
  }
  out.errors = table.Errors(now);
  std::erase_if(out.errors, [&](const signals::ZoneIntensityError& e) {
    return !std::binary_search(zones.begin(), zones.end(), e.zone);
  });
  return out;
}

}  // namespace

ZoneReadings StaticReadings(const api::CarbonSpec& carbon, std::span<const std::string> zones,
                            signals::SteadyTime now) {
  ZoneReadings out;
  for (const std::string& zone : Distinct(zones)) {
    if (const auto it = carbon.static_intensity.find(zone); it != carbon.static_intensity.end()) {
      out.intensity.emplace(zone, it->second);
    } else {
      out.errors.push_back({.zone = zone,
                            .error = "spec.carbon.static has no entry for zone \"" + zone + "\"",
                            .failed_at = now});
    }
  }
  return out;
}

GridIntensities::GridIntensities(kube::Client& client, MetricsFetcher& sdk_fetcher,
                                 const GridIntensitiesOptions& options, const Clock& clock,
                                 Changed changed)
    : client_(client),
      config_map_metrics_(options.config_map_metrics),
      clock_(clock),
      changed_(std::move(changed)),
      poller_(sdk_fetcher,
              {.timeout = options.sdk_timeout,
               .min_interval = options.sdk_poll_interval,
               .hold = kLongestHold,
               .resolve = options.resolve ? options.resolve : Resolver(ResolveHost),
               .allowed_cidrs = options.sdk_allowed_cidrs},
              options.sdk_max_in_flight, clock,
              [this](const std::string& url) { NotifyPools("", url); }),
      sdk_urls_({.limit = options.max_sdk_urls_per_namespace,
                 .what = "Carbon Aware SDK URLs (spec.carbon.carbonAwareSdk.url)",
                 .flag = "--max-carbon-sdk-urls-per-namespace"}),
      config_maps_({.limit = options.max_config_maps_per_namespace,
                    .what = "ConfigMaps (spec.carbon.configMapRef)",
                    .flag = "--max-carbon-config-maps-per-namespace"}) {}

GridIntensities::~GridIntensities() { Stop(); }

void GridIntensities::Start() { poller_.Start(); }

void GridIntensities::Stop() {
  std::map<std::string, std::unique_ptr<Watch>> watches;
  {
    const std::lock_guard lock(mu_);
    stopped_ = true;
    watches = watches_.TakeAll();
  }
  watches.clear();  // joins their threads, whose handlers may be waiting for mu_
  poller_.Stop();
}

std::unique_ptr<GridIntensities::Watch> GridIntensities::MakeWatch(const std::string& ns,
                                                                   const std::string& name) {
  const std::string key = ns + "/" + name;
  auto watch =
      std::make_unique<Watch>(client_,
                              kube::ReflectorOptions{.resource = kube::resources::kConfigMaps,
                                                     .ns = ns,
                                                     .field_selector = "metadata.name=" + name,
                                                     .metrics = config_map_metrics_},
                              ToIntensityConfigMap, clock_);
  const auto notify = [this, key] { NotifyPools(key, ""); };
  watch->AddHandlers(
      {.on_add = [notify](const IntensityConfigMap&) { notify(); },
       .on_update = [notify](const IntensityConfigMap&, const IntensityConfigMap&) { notify(); },
       .on_delete = [notify](const IntensityConfigMap&) { notify(); }});
  watch->Start();
  return watch;
}

void GridIntensities::WantSdkLocked() {
  std::map<std::string, std::vector<std::string>> wanted;
  for (const auto& [key, track] : pools_) {
    if (track.sdk_url.empty() || track.zones.empty()) continue;
    auto& zones = wanted[track.sdk_url];
    zones.insert(zones.end(), track.zones.begin(), track.zones.end());
  }
  poller_.Want(std::move(wanted));  // sorts and dedups; takes the poller's lock, never ours
}

ZoneReadings GridIntensities::Track(const std::string& pool_key, const api::InferencePool& pool,
                                    std::span<const std::string> zones_asked) {
  const api::CarbonSpec& carbon = pool.spec.carbon;
  const signals::SteadyTime now = clock_.Now();
  const std::vector<std::string> zones = Distinct(zones_asked);
  std::string config_map;
  if (carbon.config_map_ref) config_map = pool.ns + "/" + carbon.config_map_ref->name;
  std::string sdk_url = carbon.carbon_aware_sdk ? carbon.carbon_aware_sdk->url : "";
  const bool live = !config_map.empty() || !sdk_url.empty();
  const std::chrono::seconds hold(std::max(0, carbon.max_stale_seconds));
  std::unique_ptr<Watch> unused;
  ZoneReadings out;
  {
    const std::lock_guard lock(mu_);
    if (stopped_) return live ? ZoneReadings{.pending = zones} : StaticReadings(carbon, zones, now);
    // Past its namespace's cap, the pool's source is neither watched nor polled.
    std::string refused = config_maps_.Use(pool_key, pool.ns, config_map);
    if (!refused.empty()) config_map.clear();
    if (std::string why = sdk_urls_.Use(pool_key, pool.ns, sdk_url); !why.empty()) {
      sdk_url.clear();
      refused = std::move(why);
    }
    auto it = pools_.find(pool_key);
    const bool fresh = it == pools_.end() || it->second.config_map != config_map ||
                       it->second.sdk_url != sdk_url || it->second.table.hold() != hold;
    if (fresh) {
      PoolTrack track{.config_map = config_map,
                      .sdk_url = sdk_url,
                      .zones = {},
                      .table = signals::ZoneIntensities(hold)};
      it = pools_.insert_or_assign(pool_key, std::move(track)).first;
    }
    PoolTrack& track = it->second;
    const bool zones_moved = track.zones != zones;
    track.zones = zones;
    if (fresh || zones_moved) WantSdkLocked();  // the poller's set changes only when it must
    track.table.RetainOnly(zones);
    const Watch* watch = watches_.Use(
        pool_key, config_map, [&] { return MakeWatch(pool.ns, carbon.config_map_ref->name); },
        unused);
    if (watch != nullptr) {
      if (watch->HasSynced()) {
        ReadIntensityConfigMap(watch->Get(config_map).get(), config_map, zones, now, track.table);
      } else if (watch->Stale()) {  // its list keeps failing (forbidden, say): the log says why
        const std::string why = "ConfigMap " + config_map +
                                ": cannot be listed and watched (the operator's log says why)";
        for (const std::string& zone : zones) track.table.Fail(zone, why, now);
      }  // else before its first list: nothing known yet (pending)
    } else if (!sdk_url.empty()) {
      if (const auto polled = poller_.Readings(sdk_url)) {
        for (const std::string& zone : zones) {
          if (const signals::ZoneReading* r = polled->Reading(zone)) track.table.Take(zone, *r);
        }
      }
    }
    out = live ? ReadingsOf(track.table, zones, now) : StaticReadings(carbon, zones, now);
    out.refused = std::move(refused);
  }
  unused.reset();  // stops it without the lock
  return out;
}

void GridIntensities::Forget(const std::string& pool_key) {
  std::unique_ptr<Watch> unused;
  {
    const std::lock_guard lock(mu_);
    const auto it = pools_.find(pool_key);
    if (it == pools_.end()) return;
    const bool sdk = !it->second.sdk_url.empty();
    pools_.erase(it);
    sdk_urls_.Forget(pool_key);
    config_maps_.Forget(pool_key);
    if (sdk) WantSdkLocked();
    unused = watches_.Forget(pool_key);
  }
  unused.reset();  // stops it without the lock
}

void GridIntensities::NotifyPools(const std::string& config_map, const std::string& sdk_url) {
  if (!changed_) return;
  std::vector<std::string> pools;
  {
    const std::lock_guard lock(mu_);
    if (!config_map.empty()) {
      pools = watches_.Users(config_map);
    } else {
      for (const auto& [key, track] : pools_) {
        if (track.sdk_url == sdk_url) pools.push_back(key);
      }
    }
  }
  for (const std::string& key : pools) changed_(key);
}

}  // namespace eoc::controller::carbon
