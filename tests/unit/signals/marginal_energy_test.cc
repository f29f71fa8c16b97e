#include "signals/marginal_energy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "routing/worker.h"

namespace eoc::signals {
namespace {

using std::chrono::seconds;

const MarginalEnergy::TimePoint kStart{seconds(1000)};
constexpr seconds kInterval{5};  // the default metrics.intervalSeconds

// A real GPU's line, from ../shared/energy-profiles/mlenergy.csv: ML.ENERGY v3.0, lm-arena-chat,
// meta-llama/Llama-3.1-8B-Instruct on one H100-80GB-HBM3, the rows of batch 8 (1069.57 tokens/s,
// 486.44 W) and batch 64 (5147.15 tokens/s, 610.35 W); the rows of batch 16 and 32 lie within
// 3 W of it.
constexpr double kLowRate = 1069.5688508868182;
constexpr double kLowWatts = 486.4380535594687;
constexpr double kHighRate = 5147.153245011704;
constexpr double kHighWatts = 610.3476218460647;
constexpr double kSlope = (kHighWatts - kLowWatts) / (kHighRate - kLowRate);  // 0.0304 J/token
constexpr double kIntercept = kLowWatts - kSlope * kLowRate;                  // 453.9 W
// The H100's profile: idle from gpus.csv (67.3 W, no pod), maximum its 700 W power limit, and the
// most tokens per second of the same runs (batch 512, 9805.6 tokens/s): 0.0645 J/token.
const EnergyProfile kH100{.idle_watts = 67.316, .max_watts = 700, .max_tokens_per_second = 9805.6};
// What an H100 holding an idle vLLM reads (gpus.csv, idle_with_engine_w).
constexpr double kIdleWithEngineWatts = 113.611;

// Scrapes of a worker on the line watts = intercept + slope * rate, at rates spread uniformly over
// the batch 8 to 64 range, with Gaussian noise of `noise_watts` (NVML reads a few watts apart
// from one second to the next).
class NoisyLine {
 public:
  explicit NoisyLine(std::uint32_t seed, double noise_watts = 5)
      : rng_(seed), rate_(kLowRate, kHighRate), noise_(0, noise_watts) {}

  struct Scrape {
    double watts;
    double tokens_per_second;
  };
  Scrape Next(double slope = kSlope, double intercept = kIntercept) {
    const double rate = rate_(rng_);
    return {intercept + slope * rate + noise_(rng_), rate};
  }
  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
  std::uniform_real_distribution<double> rate_;
  std::normal_distribution<double> noise_;
};

// Feeds `n` scrapes of `worker` on the given line, one interval apart from `*at`, advancing it.
void Feed(MarginalEnergy& energy, NoisyLine& worker, std::size_t n, MarginalEnergy::TimePoint* at,
          double slope = kSlope) {
  for (std::size_t i = 0; i < n; ++i) {
    const NoisyLine::Scrape s = worker.Next(slope);
    energy.Add(*at, s.watts, s.tokens_per_second);
    *at += kInterval;
  }
}

TEST(MarginalEnergy, RecoversTheSlopeOfARealGpuFromNoisyScrapes) {
  for (const std::uint32_t seed : {1U, 2U, 3U}) {
    SCOPED_TRACE(seed);
    MarginalEnergy energy(kH100);
    NoisyLine worker(seed);
    auto at = kStart;
    Feed(energy, worker, MarginalEnergy::kCapacity, &at);
    const auto& fit = energy.fit();
    ASSERT_TRUE(fit);
    EXPECT_NEAR(fit->joules_per_token, kSlope, 0.1 * kSlope);
    EXPECT_NEAR(fit->intercept_watts, kIntercept, 10);
    EXPECT_EQ(fit->points, MarginalEnergy::kCapacity);
    EXPECT_DOUBLE_EQ(energy.joules_per_token(), fit->joules_per_token);
  }
}

TEST(MarginalEnergy, WithoutAProfileTheWindowIsTheReference) {
  MarginalEnergy energy;
  NoisyLine worker(4);
  auto at = kStart;
  Feed(energy, worker, MarginalEnergy::kCapacity, &at);
  ASSERT_TRUE(energy.fit());
  EXPECT_NEAR(energy.joules_per_token(), kSlope, 0.1 * kSlope);
}

// Least squares, to show what the spikes do to a mean.
double LeastSquaresSlope(const std::vector<NoisyLine::Scrape>& scrapes) {
  double sx = 0;
  double sy = 0;
  double sxx = 0;
  double sxy = 0;
  for (const auto& s : scrapes) {
    sx += s.tokens_per_second;
    sy += s.watts;
    sxx += s.tokens_per_second * s.tokens_per_second;
    sxy += s.tokens_per_second * s.watts;
  }
  const auto n = static_cast<double>(scrapes.size());
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

TEST(MarginalEnergy, WattsSpikesBarelyMoveIt) {
  // One scrape in five (7 of 32, 22%) reads 300 W too high: at its own rate, or all of them at the
  // lowest rates, where they pull a slope the most.
  for (const bool at_low_rates : {false, true}) {
    SCOPED_TRACE(at_low_rates);
    MarginalEnergy energy(kH100);
    NoisyLine worker(5);
    std::vector<NoisyLine::Scrape> scrapes;
    auto at = kStart;
    for (std::size_t i = 0; i < MarginalEnergy::kCapacity; ++i, at += kInterval) {
      NoisyLine::Scrape s = worker.Next();
      if (i % 5 == 0) {
        if (at_low_rates) s.tokens_per_second = kLowRate + (10 * static_cast<double>(i));
        s.watts = kIntercept + (kSlope * s.tokens_per_second) + 300;
      }
      scrapes.push_back(s);
      energy.Add(at, s.watts, s.tokens_per_second);
    }
    ASSERT_TRUE(energy.fit());
    EXPECT_NEAR(energy.joules_per_token(), kSlope, (at_low_rates ? 0.2 : 0.1) * kSlope);
    EXPECT_NEAR(energy.fit()->intercept_watts, kIntercept, at_low_rates ? 40 : 15);
    if (at_low_rates) {
      EXPECT_LT(LeastSquaresSlope(scrapes), 0.5 * kSlope);  // a mean is lost
    }
  }
}

TEST(MarginalEnergy, AnIdleWorkerGivesNoEstimate) {
  MarginalEnergy energy(kH100);
  std::normal_distribution<double> noise(0, 2);
  std::mt19937 rng(6);
  auto at = kStart;
  for (int i = 0; i < 40; ++i, at += kInterval) {
    // Idle at 0 tokens/s, or at a trickle below the idle threshold (1% of 9805.6 tokens/s).
    energy.Add(at, kIdleWithEngineWatts + noise(rng), i % 2 == 0 ? 0 : 50);
  }
  EXPECT_FALSE(energy.fit());
  EXPECT_EQ(energy.size(), 0U);
  EXPECT_EQ(energy.joules_per_token(), 0);
  // Without a profile, 0 tokens/s is still idle.
  MarginalEnergy bare;
  for (int i = 0; i < 40; ++i, at += kInterval) bare.Add(at, kIdleWithEngineWatts, 0);
  EXPECT_FALSE(bare.fit());
}

TEST(MarginalEnergy, AnIdlePeriodNeitherBendsTheSlopeNorEvictsUntilItAges) {
  MarginalEnergy energy(kH100);
  NoisyLine worker(7);
  auto at = kStart;
  Feed(energy, worker, 20, &at);
  ASSERT_TRUE(energy.fit());
  const double loaded = energy.joules_per_token();
  // A minute idle at the idle-with-engine draw: on a line through 454 W at 0 tokens/s these
  // would make the slope several times steeper.
  for (int i = 0; i < 12; ++i, at += kInterval) energy.Add(at, kIdleWithEngineWatts, 0);
  EXPECT_EQ(energy.size(), 20U);
  EXPECT_DOUBLE_EQ(energy.joules_per_token(), loaded);
  // Idle for longer than the window's age: the loaded scrapes age out, the profile takes over.
  const auto idle_until = at + MarginalEnergy::kMaxAge;
  for (; at <= idle_until; at += kInterval) energy.Add(at, kIdleWithEngineWatts, 0);
  EXPECT_EQ(energy.size(), 0U);
  EXPECT_FALSE(energy.fit());
}

TEST(MarginalEnergy, AFlatTokenRateGivesNoEstimate) {
  MarginalEnergy energy(kH100);
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> rate(5000, 5400);  // a 4% band of the profile's max
  std::normal_distribution<double> noise(0, 5);
  auto at = kStart;
  for (std::size_t i = 0; i < MarginalEnergy::kCapacity; ++i, at += kInterval) {
    const double r = rate(rng);
    energy.Add(at, kIntercept + kSlope * r + noise(rng), r);
  }
  EXPECT_EQ(energy.size(), MarginalEnergy::kCapacity);
  EXPECT_FALSE(energy.fit());
  // Nor does one scrape away from a steady rate (within 1% of the profile's maximum): the window
  // spans enough, but its far enough pairs are that one scrape's.
  MarginalEnergy steady(kH100);
  std::uniform_real_distribution<double> band(5100, 5200);
  for (std::size_t i = 0; i < MarginalEnergy::kCapacity - 1; ++i, at += kInterval) {
    const double r = band(rng);
    steady.Add(at, kIntercept + kSlope * r + noise(rng), r);
  }
  steady.Add(at, kIntercept + kSlope * kLowRate, kLowRate);
  EXPECT_EQ(steady.size(), MarginalEnergy::kCapacity);
  EXPECT_FALSE(steady.fit());
}

TEST(MarginalEnergy, TooFewScrapesGiveNoEstimate) {
  MarginalEnergy energy(kH100);
  NoisyLine worker(9, /*noise_watts=*/1);
  auto at = kStart;
  Feed(energy, worker, MarginalEnergy::kMinPoints - 1, &at);
  EXPECT_FALSE(energy.fit());
  Feed(energy, worker, 1, &at);
  ASSERT_TRUE(energy.fit());
  EXPECT_NEAR(energy.joules_per_token(), kSlope, 0.05 * kSlope);
}

TEST(MarginalEnergy, UnbelievableSlopesAreRefused) {
  const auto fit_of = [](double slope, const EnergyProfile& profile) {
    MarginalEnergy energy(profile);
    NoisyLine worker(10, /*noise_watts=*/1);
    auto at = kStart;
    Feed(energy, worker, MarginalEnergy::kCapacity, &at, slope);
    return energy.fit();
  };
  // Watts falling as tokens rise.
  EXPECT_FALSE(fit_of(-kSlope, kH100));
  EXPECT_FALSE(fit_of(-kSlope, {}));
  // A power-capped GPU at saturation: the watts do not move.
  EXPECT_FALSE(fit_of(0, kH100));
  EXPECT_FALSE(fit_of(0, {}));
  // More than 10 times the profile's 0.0645 J/token; the same without a profile is believed.
  EXPECT_FALSE(fit_of(0.7, kH100));
  EXPECT_TRUE(fit_of(0.7, {}));
  EXPECT_TRUE(fit_of(0.6, kH100));
  // A twentieth of the H100's profile: what a prompt-heavy mix costs per token, believed.
  EXPECT_TRUE(fit_of(0.0032, kH100));
  // Below a hundredth of the profile's, refused (a profile of 1 J/token, so that the watts' rise
  // alone would allow both slopes).
  const EnergyProfile costly{.idle_watts = 0, .max_watts = 1000, .max_tokens_per_second = 1000};
  EXPECT_FALSE(fit_of(0.008, costly));
  EXPECT_TRUE(fit_of(0.012, costly));
}

TEST(MarginalEnergy, TheHardCapHoldsWithoutAProfile) {
  // A CPU engine: 10 to 40 tokens/s; 50 J/token is believed, 150 is not.
  for (const double slope : {50.0, 150.0}) {
    MarginalEnergy energy;
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> rate(10, 40);
    auto at = kStart;
    for (std::size_t i = 0; i < MarginalEnergy::kCapacity; ++i, at += kInterval) {
      const double r = rate(rng);
      energy.Add(at, 80 + slope * r, r);
    }
    EXPECT_EQ(energy.fit().has_value(), slope <= MarginalEnergy::kMaxJoulesPerToken) << slope;
  }
}

TEST(MarginalEnergy, FollowsAChangedSlopeOnceTheWindowTurnsOverByCount) {
  MarginalEnergy energy(kH100);
  NoisyLine worker(12);
  auto at = kStart;
  Feed(energy, worker, MarginalEnergy::kCapacity, &at);
  ASSERT_TRUE(energy.fit());
  EXPECT_NEAR(energy.joules_per_token(), kSlope, 0.1 * kSlope);
  // The worker's power curve gets twice as steep (the integration scenario).
  Feed(energy, worker, MarginalEnergy::kCapacity / 4, &at, 2 * kSlope);
  ASSERT_TRUE(energy.fit());
  EXPECT_LT(energy.joules_per_token(), 1.5 * kSlope);  // a quarter of new scrapes: still near
  Feed(energy, worker, MarginalEnergy::kCapacity, &at, 2 * kSlope);
  EXPECT_EQ(energy.size(), MarginalEnergy::kCapacity);
  ASSERT_TRUE(energy.fit());
  EXPECT_NEAR(energy.joules_per_token(), 2 * kSlope, 0.1 * 2 * kSlope);
}

TEST(MarginalEnergy, FollowsAChangedSlopeOnceTheOldScrapesAge) {
  MarginalEnergy energy(kH100);
  NoisyLine worker(13);
  auto at = kStart;
  Feed(energy, worker, 20, &at);
  ASSERT_TRUE(energy.fit());
  // No scrape for longer than the window's age, then a few on a steeper line: only those count.
  at += MarginalEnergy::kMaxAge;
  Feed(energy, worker, MarginalEnergy::kMinPoints, &at, 2 * kSlope);
  EXPECT_EQ(energy.size(), MarginalEnergy::kMinPoints);
  ASSERT_TRUE(energy.fit());
  EXPECT_NEAR(energy.joules_per_token(), 2 * kSlope, 0.1 * 2 * kSlope);
  // At a 30 s interval, the age bounds the window before the count does: 10 scrapes.
  MarginalEnergy slow(kH100);
  for (int i = 0; i < 40; ++i) {
    const NoisyLine::Scrape s = worker.Next();
    slow.Add(kStart + i * seconds(30), s.watts, s.tokens_per_second);
  }
  EXPECT_EQ(slow.size(), 11U);  // 300 s back from the newest, both ends included
}

TEST(MarginalEnergy, BadScrapesAreIgnored) {
  MarginalEnergy energy(kH100);
  NoisyLine worker(14);
  auto at = kStart;
  Feed(energy, worker, 10, &at);
  ASSERT_TRUE(energy.fit());
  const double before = energy.joules_per_token();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  energy.Add(at, nan, 3000);
  energy.Add(at, 500, nan);
  energy.Add(at, inf, 3000);
  energy.Add(at, 0, 3000);                // no power reading
  energy.Add(at, 500, -1);                // no rate
  energy.Add(at - kInterval, 900, 3000);  // time that does not advance
  EXPECT_EQ(energy.size(), 10U);
  EXPECT_DOUBLE_EQ(energy.joules_per_token(), before);
}

TEST(MarginalEnergy, ResetForgetsEverything) {
  MarginalEnergy energy(kH100);
  NoisyLine worker(15);
  auto at = kStart;
  Feed(energy, worker, 10, &at);
  ASSERT_TRUE(energy.fit());
  energy.Reset();
  EXPECT_EQ(energy.size(), 0U);
  EXPECT_FALSE(energy.fit());
  // Time may start again anywhere (a new pod's clock is the caller's; nothing is kept).
  at = kStart;
  Feed(energy, worker, MarginalEnergy::kMinPoints, &at);
  EXPECT_TRUE(energy.fit());
}

TEST(MarginalEnergy, TheProfileStandsInUntilThereIsAnEstimate) {
  MarginalEnergy energy(kH100);
  NoisyLine worker(16);
  routing::Load load{.tokens_per_second = 3000, .grid_g_per_kwh = 350, .available = true};
  auto at = kStart;
  Feed(energy, worker, MarginalEnergy::kMinPoints - 1, &at);
  load.marginal_joules_per_token = energy.joules_per_token();
  EXPECT_DOUBLE_EQ(routing::MarginalJoulesPerToken(load, kH100), kH100.marginal_joules_per_token());

  Feed(energy, worker, MarginalEnergy::kCapacity, &at);
  load.marginal_joules_per_token = energy.joules_per_token();
  const double joules = routing::MarginalJoulesPerToken(load, kH100);
  EXPECT_NEAR(joules, kSlope, 0.1 * kSlope);
  // A request of 1,000 tokens (prompt plus expected): ~30 J, and at 350 g/kWh ~3 mg CO2e.
  EXPECT_DOUBLE_EQ(routing::ProjectedMicroJoules(load, kH100, 1000), joules * 1000 * 1e6);
  EXPECT_NEAR(routing::ProjectedMicroJoules(load, kH100, 1000), 30.4e6, 3.1e6);
  EXPECT_NEAR(routing::ProjectedGCo2e(load, kH100, 1000), joules * 1000 * 350 / 3.6e6, 1e-12);
}

}  // namespace
}  // namespace eoc::signals
