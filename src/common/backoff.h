// Waits between retries: exponential growth up to a cap, with jitter so that many clients that
// failed together do not retry together (client-go's wait.Backoff and wait.Jitter). One shape for
// the reflector, the event recorder, the leader elector and the work queue's per-key limiter;
// randomness is injected so that tests and the simulator choose it.
//
//   eoc::Backoff backoff({.initial = 800ms, .max = 30s, .factor = 2, .jitter = 1},
//                        eoc::SeededRandom(seed));
//   while (!TryOnce()) wake.SleepFor(backoff.Next(), stopped);  // 0.8-1.6 s, 1.6-3.2 s, ...
//   backoff.Reset();                                             // after a success
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace eoc {

// Uniform in [0, 1).
using Random01 = std::function<double()>;
// A Random01 from a seeded generator of its own (each call site owns one; not thread-safe).
Random01 SeededRandom(std::uint64_t seed);

struct BackoffPolicy {
  std::chrono::nanoseconds initial{0};  // the first wait, before jitter
  std::chrono::nanoseconds max{0};      // no wait grows past this, before jitter
  double factor = 2;                    // growth per failure; 1: every wait is `initial`
  // Each wait gets up to this fraction of itself more, at random: d * (1 + jitter * U[0, 1)).
  double jitter = 0;
};

// The wait after `failures` earlier failures in a row (0: the first wait), without jitter:
// min(initial * factor^failures, max) (`max` exactly, once reached). Never overflows; a negative
// `initial` or `max` counts as 0.
std::chrono::nanoseconds BackoffDelay(const BackoffPolicy& policy, int failures);

// `d` plus up to `jitter` x `d` more: d * (1 + jitter * random01), for random01 in [0, 1).
std::chrono::nanoseconds Jittered(std::chrono::nanoseconds d, double jitter, double random01);

// A random part of `d`: d * random01, for random01 in [0, 1). Spreads a first retry over [0, d)
// (client-go's event recorder), so that clients that failed together do not come back together.
std::chrono::nanoseconds Spread(std::chrono::nanoseconds d, double random01);

// A backoff's state: how many waits in a row so far. Not thread-safe.
class Backoff {
 public:
  Backoff(BackoffPolicy policy, Random01 random);

  // The next wait (jittered), and one more failure counted.
  std::chrono::nanoseconds Next();
  // The next wait would be at least `floor` (a server's Retry-After): raises this wait only.
  std::chrono::nanoseconds NextAtLeast(std::chrono::nanoseconds floor);
  // After a success: the next wait is `initial` again.
  void Reset() { failures_ = 0; }
  int Failures() const { return failures_; }
  const BackoffPolicy& policy() const { return policy_; }

 private:
  BackoffPolicy policy_;
  Random01 random_;
  int failures_ = 0;
};

}  // namespace eoc
