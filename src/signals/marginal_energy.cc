#include "signals/marginal_energy.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace eoc::signals {
namespace {

constexpr std::size_t kMaxPairs = MarginalEnergy::kCapacity * (MarginalEnergy::kCapacity - 1) / 2;

// The median of values[0, n), reordering them; n > 0.
template <std::size_t N>
double MedianOf(std::array<double, N>& values, std::size_t n) {
  const auto begin = values.begin();
  const auto end = std::next(begin, static_cast<std::ptrdiff_t>(n));
  const auto mid = std::next(begin, static_cast<std::ptrdiff_t>(n / 2));
  std::nth_element(begin, mid, end);
  if (n % 2 == 1) return *mid;
  // An even count: the mean of the two middle values, the lower being the largest below mid.
  return (*std::max_element(begin, mid) + *mid) / 2;
}

}  // namespace

MarginalEnergy::MarginalEnergy(const EnergyProfile& profile) : profile_(profile) {}

void MarginalEnergy::Reset() {
  first_ = 0;
  size_ = 0;
  newest_.reset();
  fit_.reset();
}

void MarginalEnergy::EvictOlderThan(TimePoint cutoff) {
  while (size_ > 0 && points_[first_].at < cutoff) {
    first_ = (first_ + 1) % kCapacity;
    --size_;
  }
}

void MarginalEnergy::Add(TimePoint at, double watts, double tokens_per_second) {
  if (!std::isfinite(watts) || watts <= 0) return;
  if (!std::isfinite(tokens_per_second) || tokens_per_second < 0) return;
  if (newest_ && at <= *newest_) return;
  newest_ = at;
  EvictOlderThan(at - kMaxAge);
  const double idle =
      std::max(kIdleTokensPerSecond, kIdleFraction * std::max(0.0, profile_.max_tokens_per_second));
  if (tokens_per_second >= idle) {
    if (size_ == kCapacity) {  // full: the oldest goes
      first_ = (first_ + 1) % kCapacity;
      --size_;
    }
    points_[(first_ + size_) % kCapacity] = Point{at, watts, tokens_per_second};
    ++size_;
  }
  fit_ = Estimate();
}

std::optional<MarginalEnergy::Fit> MarginalEnergy::Estimate() const {
  if (size_ < kMinPoints) return std::nullopt;
  double lowest = At(0).tokens_per_second;
  double highest = lowest;
  for (std::size_t i = 1; i < size_; ++i) {
    lowest = std::min(lowest, At(i).tokens_per_second);
    highest = std::max(highest, At(i).tokens_per_second);
  }
  const double reference =
      profile_.max_tokens_per_second > 0 ? profile_.max_tokens_per_second : highest;
  if (highest - lowest < kMinSpreadFraction * reference) return std::nullopt;

  // Theil-Sen: the median of the pairwise slopes of pairs far enough apart in token rate.
  const double min_pair = kMinPairFraction * reference;
  std::array<double, kMaxPairs> slopes{};
  std::size_t pairs = 0;
  for (std::size_t i = 0; i < size_; ++i) {
    for (std::size_t j = i + 1; j < size_; ++j) {
      const Point& a = At(i);
      const Point& b = At(j);
      const double dx = b.tokens_per_second - a.tokens_per_second;
      if (std::abs(dx) < min_pair) continue;
      slopes.at(pairs++) = (b.watts - a.watts) / dx;
    }
  }
  const auto n = static_cast<double>(size_);
  const double all_pairs = n * (n - 1) / 2;
  if (pairs == 0 || static_cast<double>(pairs) < kMinUsablePairShare * all_pairs) {
    return std::nullopt;
  }
  const double slope = MedianOf(slopes, pairs);

  double ceiling = kMaxJoulesPerToken;
  double floor = kMinWattsRise / (highest - lowest);
  if (const double profiled = profile_.marginal_joules_per_token(); profiled > 0) {
    ceiling = std::min(ceiling, kMaxProfileMultiple * profiled);
    floor = std::max(floor, kMinProfileFraction * profiled);
  }
  if (!(slope > floor) || slope > ceiling) return std::nullopt;

  std::array<double, kCapacity> residuals{};
  for (std::size_t i = 0; i < size_; ++i) {
    residuals.at(i) = At(i).watts - slope * At(i).tokens_per_second;
  }
  return Fit{
      .joules_per_token = slope,
      .intercept_watts = MedianOf(residuals, size_),
      .points = size_,
      .pairs = pairs,
  };
}

}  // namespace eoc::signals
