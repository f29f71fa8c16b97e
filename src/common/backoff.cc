#include "common/backoff.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <utility>

namespace eoc {

using std::chrono::nanoseconds;

namespace {

// The largest wait that a steady time point can still add without overflow for a century.
constexpr double kMaxNanoseconds = 1e18;

nanoseconds FromDouble(double ns) {
  if (!(ns > 0)) return nanoseconds::zero();  // also NaN
  return nanoseconds(static_cast<std::int64_t>(std::min(ns, kMaxNanoseconds)));
}

}  // namespace

Random01 SeededRandom(std::uint64_t seed) {
  auto engine = std::make_shared<std::mt19937_64>(seed);
  return [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
}

nanoseconds BackoffDelay(const BackoffPolicy& policy, int failures) {
  const auto initial = static_cast<double>(std::max(policy.initial, nanoseconds::zero()).count());
  const auto cap = static_cast<double>(std::max(policy.max, nanoseconds::zero()).count());
  const double factor = std::max(policy.factor, 1.0);
  // pow is exact for a factor of 2 (and the waits the work queue counts on), and overflows to
  // infinity, which the cap takes.
  const double wait = initial * std::pow(factor, std::max(failures, 0));
  // The cap itself when reached, not its round trip through a double: a cap of
  // nanoseconds::max() (the work queue's "no cap") stays exactly that.
  if (wait >= cap) return std::max(policy.max, nanoseconds::zero());
  return FromDouble(wait);
}

nanoseconds Jittered(nanoseconds d, double jitter, double random01) {
  if (d <= nanoseconds::zero()) return nanoseconds::zero();
  const double extra = std::clamp(random01, 0.0, 1.0) * std::max(jitter, 0.0);
  return FromDouble(static_cast<double>(d.count()) * (1.0 + extra));
}

nanoseconds Spread(nanoseconds d, double random01) {
  if (d <= nanoseconds::zero()) return nanoseconds::zero();
  return FromDouble(static_cast<double>(d.count()) * std::clamp(random01, 0.0, 1.0));
}

Backoff::Backoff(BackoffPolicy policy, Random01 random)
    : policy_(policy), random_(std::move(random)) {}

nanoseconds Backoff::Next() { return NextAtLeast(nanoseconds::zero()); }

nanoseconds Backoff::NextAtLeast(nanoseconds floor) {
  const nanoseconds base = BackoffDelay(policy_, failures_);
  if (failures_ < std::numeric_limits<int>::max()) ++failures_;
  const double random01 = policy_.jitter > 0 && random_ ? random_() : 0.0;
  return std::max(Jittered(base, policy_.jitter, random01), floor);
}

}  // namespace eoc
