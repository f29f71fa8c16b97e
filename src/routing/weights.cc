#include "routing/weights.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>

namespace eoc::routing {
namespace {

// A figure that is finite and positive, else nothing (unknown).
std::optional<double> Known(double value) {
  if (std::isfinite(value) && value > 0) return value;
  return std::nullopt;
}

// The median of the known values (the mean of the two middle ones for an even count), 1 when none
// is known.
double MedianOfKnown(const std::vector<std::optional<double>>& values) {
  std::vector<double> known;
  for (const auto& v : values) {
    if (v) known.push_back(*v);
  }
  if (known.empty()) return 1;
  std::sort(known.begin(), known.end());
  const std::size_t half = known.size() / 2;
  return known.size() % 2 == 1 ? known[half] : (known[half - 1] + known[half]) / 2;
}

// The figure each worker's score divides or multiplies by (J, G or R); nothing when unknown.
std::optional<double> Figure(Strategy strategy, const WorkerLoad& w) {
  switch (strategy) {
    case Strategy::kJouleWeighted:
      return Known(MarginalJoulesPerToken(w.load, w.profile));
    case Strategy::kCarbonWeighted:
      return Known(MarginalGramsPerToken(w.load, w.profile));
    case Strategy::kLatencyWeighted:
      return Known(std::max(w.load.tokens_per_second, w.profile.max_tokens_per_second));
    case Strategy::kRoundRobin:
    case Strategy::kLeastBusy:
      break;
  }
  return 1.0;
}

double Score(Strategy strategy, const WorkerLoad& w, double figure) {
  const double headroom = 1 - Busyness(w.load, w.picks_since_scrape, w.max_concurrency);
  switch (strategy) {
    case Strategy::kJouleWeighted:
    case Strategy::kCarbonWeighted:
      return headroom / figure;
    case Strategy::kLatencyWeighted: {
      const double queue =
          std::max(0.0, w.load.running + w.load.waiting + w.picks_since_scrape) + 1;
      return figure / queue;
    }
    case Strategy::kRoundRobin:
    case Strategy::kLeastBusy:
      break;
  }
  return 1;
}

}  // namespace

std::vector<std::int32_t> ComputeWeights(Strategy strategy, std::span<const WorkerLoad> pool) {
  std::vector<std::optional<double>> figures;
  figures.reserve(pool.size());
  for (const WorkerLoad& w : pool) {
    figures.push_back(w.load.available ? Figure(strategy, w) : std::nullopt);
  }
  const double median = MedianOfKnown(figures);

  // Scores of the available workers; 0 for saturated ones, -1 for the unavailable.
  std::vector<double> scores(pool.size(), -1);
  double best = 0;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    const WorkerLoad& w = pool[i];
    if (!w.load.available) continue;
    const bool saturated = Busyness(w.load, w.picks_since_scrape, w.max_concurrency) >= 1;
    const double score = saturated ? 0 : Score(strategy, w, figures[i].value_or(median));
    scores[i] = std::isfinite(score) ? std::max(score, 0.0) : 0;
    best = std::max(best, scores[i]);
  }

  std::vector<std::int32_t> weights(pool.size(), 0);
  std::int32_t lowest = std::numeric_limits<std::int32_t>::max();
  for (std::size_t i = 0; i < pool.size(); ++i) {
    if (scores[i] <= 0) continue;
    const auto scaled = static_cast<std::int32_t>(std::lround(kMaxWeight * (scores[i] / best)));
    weights[i] = std::clamp(scaled, 1, kMaxWeight);
    lowest = std::min(lowest, weights[i]);
  }
  const std::int32_t unavailable =
      lowest == std::numeric_limits<std::int32_t>::max() ? kMaxWeight : lowest;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    if (!pool[i].load.available) weights[i] = unavailable;
  }
  return weights;
}

}  // namespace eoc::routing
