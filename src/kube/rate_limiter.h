// A token bucket that spaces out calls to the API server: `qps` tokens a second, up to `burst`
// saved, as client-go's client-side limiter (controller-runtime's defaults: 20 QPS, burst 30).
//
//   eoc::kube::TokenBucket bucket(20, 30, clock);
//   std::this_thread::sleep_for(bucket.Reserve());   // zero while tokens are left
#pragma once

#include <chrono>
#include <mutex>

#include "common/clock.h"

namespace eoc::kube {

class TokenBucket {
 public:
  // qps <= 0 disables limiting. burst is at least 1.
  TokenBucket(double qps, int burst, const Clock& clock);

  // Takes one token and returns how long the caller must wait before using it (zero if one was
  // there). Reservations queue: each caller gets its own turn, in order. Thread-safe.
  std::chrono::nanoseconds Reserve();

 private:
  const double qps_;
  const double burst_;
  const Clock& clock_;
  std::mutex mu_;
  double tokens_;  // may go negative: tokens promised to callers that are waiting
  std::chrono::steady_clock::time_point last_;
};

}  // namespace eoc::kube
