// Rates from Prometheus counters, scrape by scrape, robust to resets: a counter lower than at the
// last scrape means its exporter restarted, and its new value is taken as the increase since the
// restart, as Prometheus' rate() does; a rate is never negative. Time is passed in, never read.
// TokenRate (token_rate.h) applies the same rule to an engine's two token counters.
//
//   CounterRate watts;                                     // a joules counter gives watts
//   watts.Add(t0, /*total=*/1000);                         // nullopt: the first scrape
//   std::optional<double> w = watts.Add(t0 + 10s, 3500);   // 250 (joules per second)
#pragma once

#include <chrono>
#include <cmath>
#include <optional>

namespace eoc::signals {

// What a counter grew by from `before` to `now`: after a reset (a lower value), all of `now`.
inline double CounterIncrease(double before, double now) {
  return now >= before ? now - before : now;
}

// Whether `value` can be a counter's total: finite and not negative.
inline bool IsCounterTotal(double value) { return std::isfinite(value) && value >= 0; }

class CounterRate {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // The increase per second over the interval since the last accepted scrape; nullopt for the
  // first scrape, and for one at or before the last one (it is ignored). A total that is
  // negative or not finite gives no rate and forgets the last scrape, so the next one starts
  // afresh.
  std::optional<double> Add(TimePoint at, double total);

  // Forgets the last scrape (the series left, or was unavailable for long).
  void Reset() { last_.reset(); }

 private:
  struct Scrape {
    TimePoint at;
    double total = 0;
  };
  std::optional<Scrape> last_;
};

}  // namespace eoc::signals
