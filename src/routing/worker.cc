#include "routing/worker.h"

#include <algorithm>

namespace eoc::routing {

bool UsesEqualWeights(Strategy strategy) {
  return strategy == Strategy::kRoundRobin || strategy == Strategy::kLeastBusy;
}

bool Serves(const Capability& capability, std::string_view model) {
  if (model.empty() || capability.models.empty()) return true;
  return std::find(capability.models.begin(), capability.models.end(), model) !=
         capability.models.end();
}

double Busyness(const Load& load, double picks_since_scrape, std::int32_t max_concurrency) {
  const double count = std::max(0.0, load.running + load.waiting + picks_since_scrape);
  const double limit = max_concurrency > 0 ? max_concurrency : kDefaultMaxConcurrency;
  return std::max(count / limit, std::clamp(load.kv_cache_usage, 0.0, 1.0));
}

double MarginalJoulesPerToken(const Load& load, const EnergyProfile& profile) {
  if (load.marginal_joules_per_token > 0) return load.marginal_joules_per_token;
  return profile.marginal_joules_per_token();
}

double MarginalGramsPerToken(const Load& load, const EnergyProfile& profile) {
  if (load.grid_g_per_kwh <= 0) return 0;
  return MarginalJoulesPerToken(load, profile) * load.grid_g_per_kwh / kJoulesPerKwh;
}

double ProjectedMicroJoules(const Load& load, const EnergyProfile& profile, std::int64_t tokens) {
  if (tokens <= 0) return 0;
  return MarginalJoulesPerToken(load, profile) * static_cast<double>(tokens) * 1e6;
}

double ProjectedGCo2e(const Load& load, const EnergyProfile& profile, std::int64_t tokens) {
  if (tokens <= 0) return 0;
  return MarginalGramsPerToken(load, profile) * static_cast<double>(tokens);
}

}  // namespace eoc::routing
