#include "kube/rate_limiter.h"

#include <algorithm>

namespace eoc::kube {

TokenBucket::TokenBucket(double qps, int burst, const Clock& clock)
    : qps_(qps),
      burst_(static_cast<double>(std::max(burst, 1))),
      clock_(clock),
      tokens_(burst_),
      last_(clock.Now()) {}

std::chrono::nanoseconds TokenBucket::Reserve() {
  if (qps_ <= 0) return std::chrono::nanoseconds::zero();
  const std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  const std::chrono::duration<double> elapsed = now - last_;
  last_ = now;
  tokens_ = std::min(burst_, tokens_ + elapsed.count() * qps_);
  tokens_ -= 1.0;
  if (tokens_ >= 0) return std::chrono::nanoseconds::zero();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

}  // namespace eoc::kube
