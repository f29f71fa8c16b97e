// A worker's marginal joules per token (prompt plus generated), estimated online as the slope of
// watts over token rate on its recent scrapes (DESIGN.md, "The model": the energy model is
// watts = idleWatts + marginal * tokens_per_second). One estimator per worker (per pod: a new pod
// is a new estimator, so nothing carries over a restart); time is passed in, never read.
//
//   MarginalEnergy energy(worker.profile);          // the profile bounds what is believable
//   energy.Add(now, /*watts=*/610.3, /*tokens_per_second=*/5147);      // each scrape
//   load.marginal_joules_per_token = energy.joules_per_token();       // 0: not enough data yet,
//   routing::MarginalJoulesPerToken(load, worker.profile);           // so the profile's is used
//   if (const auto& fit = energy.fit()) fit->intercept_watts;         // the line at 0 tokens/s
//
// The rule (every constant is below, with its reason):
// - A bounded window: the last kCapacity scrapes no older than kMaxAge (relative to the newest
//   scrape), in a fixed ring: no allocation, whatever the number of scrapes.
// - Idle scrapes (a token rate below kIdleTokensPerSecond, or below kIdleFraction of the profile's
//   maximum) are not kept: they say nothing about the cost of a token under load, and real GPUs
//   are far from the line there (ML.ENERGY's H100 running Llama-3.1-8B draws 486 W at 1,070
//   tokens/s and 610 W at 5,150, a line through 454 W at 0 tokens/s, while an H100 holding an idle
//   vLLM reads 114 W). An idle worker therefore gives no estimate, and an idle period neither
//   bends the slope nor pushes loaded scrapes out of the window (its age still does).
// - The slope is Theil-Sen's: the median of the slopes of every pair of scrapes whose token rates
//   differ by at least kMinPairFraction of the reference rate (closer pairs are noise over a tiny
//   difference). It tolerates up to ~29% of arbitrarily bad scrapes (a watts spike, a stale
//   reading) where least squares is moved by one, and for Gaussian noise it is nearly as precise
//   (~91% efficiency). Its cost: n(n-1)/2 slopes and one selection, 496 slopes for the 32
//   scrapes of a full window: ~14 us per scrape per worker (-O2, one shared core; timed once by
//   hand, not by a test).
// - Enough data: at least kMinPoints scrapes, spanning at least kMinSpreadFraction of the
//   reference rate, with at least kMinUsablePairShare of the pairs far enough apart (so no one
//   scrape decides the slope). The reference rate is the profile's maximum tokens per second, or
//   without a profile the highest rate in the window.
// - A believable answer: a slope whose line rises at least kMinWattsRise across the window's
//   token rates, at most kMaxJoulesPerToken, and with a profile between kMinProfileFraction and
//   kMaxProfileMultiple times the profile's marginal. A slope near zero is what a power-capped GPU
//   shows at saturation (the same H100 stays at ~690 W from 8,200 to 9,800 tokens/s): the extra
//   tokens there cost time, not watts, and taking it would make the busiest worker look free.
// - The intercept is the median of watts - slope * rate over the window.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>

#include "common/routing_terms.h"

namespace eoc::signals {

class MarginalEnergy {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // At most this many scrapes: 2.7 minutes at the default 5 s interval. Enough for Theil-Sen to
  // be precise (its error shrinks as 1/sqrt(n)), few enough that a changed power curve is followed
  // within minutes, and 496 pairs keep the fit cheap.
  static constexpr std::size_t kCapacity = 32;
  // And none older than this: at slower intervals the window is bounded in time instead, so a
  // worker's estimate never rests on how it behaved long ago.
  static constexpr std::chrono::seconds kMaxAge{300};
  // Fewer scrapes than this give no estimate (40 s at the default interval): a median of the
  // slopes of fewer points is too easily moved by one or two bad ones.
  static constexpr std::size_t kMinPoints = 8;
  // A scrape below this rate is idle (1 token/s is one short request every few minutes)...
  static constexpr double kIdleTokensPerSecond = 1;
  // ...and so is one below this share of the profile's maximum (98 tokens/s on the H100 above,
  // below what any batch of ML.ENERGY's runs reached).
  static constexpr double kIdleFraction = 0.01;
  // The window's token rates must span this share of the reference rate: over a narrower range
  // the watts' noise (several watts on NVML) swamps the change the tokens make.
  static constexpr double kMinSpreadFraction = 0.1;
  // A pair of scrapes closer than this share of the reference rate gives no slope.
  static constexpr double kMinPairFraction = 0.02;
  // At least this share of all pairs must be far enough apart: 31 scrapes at one rate and one at
  // another span the range, yet their slope is that one scrape's.
  static constexpr double kMinUsablePairShare = 0.25;
  // The fitted line must rise at least this much from the window's lowest token rate to its
  // highest: NVML's readings wander by a few watts, so a smaller rise cannot be told from flat
  // watts (a negative or zero slope included). The H100 above rises 30 W over a tenth of its range.
  static constexpr double kMinWattsRise = 10;
  // Never more joules per token than this (a CPU engine serving 10 tokens/s for 100 extra watts
  // costs 10 J; the costliest configuration in ML.ENERGY's data, an 8 x B200 480B model, 34 J).
  static constexpr double kMaxJoulesPerToken = 100;
  // With a profile, a slope outside [kMinProfileFraction, kMaxProfileMultiple] x its marginal is
  // refused: the profile is a rough figure, not off by two orders of magnitude below nor one
  // above. Below, the bound is wide because the profile is a decode figure (ML.ENERGY measures
  // output tokens) while the slope is per token of either kind, and a prompt token costs far
  // less (prefill computes thousands a step): on the Azure code trace's prompt-heavy mix the
  // simulator's H100 measures 0.004 J/token against its profile's 0.081. At a tenth, that slope was
  // refused and the profile's figure, 20 times the measurement, stood in for it, so JouleWeighted
  // sent the pool's work to the A100s that measured 0.011 (bench/results/peers.md, before and
  // after this bound).
  static constexpr double kMinProfileFraction = 0.01;
  static constexpr double kMaxProfileMultiple = 10;

  struct Fit {
    double joules_per_token = 0;  // the slope: watts per (token/s)
    double intercept_watts = 0;   // the line's watts at 0 tokens/s (above the idle draw on GPUs)
    std::size_t points = 0;       // scrapes in the window
    std::size_t pairs = 0;        // pairs whose slopes were taken
  };

  // An incomplete profile (max_tokens_per_second 0, the default) is no profile: the bounds and the
  // reference rate then come from the window alone.
  explicit MarginalEnergy(const EnergyProfile& profile = {});

  // One scrape: the worker's watts and its token rate (prompt plus generated) over the interval.
  // Ignored: a time at or before the newest scrape's, watts that are not finite or not above 0
  // (unknown), a rate that is not finite or negative. An idle scrape only evicts by age.
  void Add(TimePoint at, double watts, double tokens_per_second);

  // The estimate from the window as it is; nullopt until there is enough data or when the slope
  // is not believable.
  const std::optional<Fit>& fit() const { return fit_; }
  // The slope, or 0 (unknown: routing::MarginalJoulesPerToken then takes the profile's).
  double joules_per_token() const { return fit_ ? fit_->joules_per_token : 0; }
  // Scrapes in the window.
  std::size_t size() const { return size_; }

  // Forgets every scrape (the worker's metrics were unavailable for long).
  void Reset();

 private:
  struct Point {
    TimePoint at;
    double watts = 0;
    double tokens_per_second = 0;
  };

  const Point& At(std::size_t i) const { return points_[(first_ + i) % kCapacity]; }
  void EvictOlderThan(TimePoint cutoff);
  std::optional<Fit> Estimate() const;

  EnergyProfile profile_;
  std::array<Point, kCapacity> points_{};
  std::size_t first_ = 0;  // the oldest scrape's slot
  std::size_t size_ = 0;
  std::optional<TimePoint> newest_;  // also the newest idle scrape's
  std::optional<Fit> fit_;
};

}  // namespace eoc::signals
