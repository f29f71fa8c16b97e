#include "signals/counter_rate.h"

namespace eoc::signals {

std::optional<double> CounterRate::Add(TimePoint at, double total) {
  if (!IsCounterTotal(total)) {
    last_.reset();
    return std::nullopt;
  }
  if (last_ && at <= last_->at) return std::nullopt;
  const std::optional<Scrape> before = last_;
  last_ = Scrape{at, total};
  if (!before) return std::nullopt;
  const double seconds = std::chrono::duration<double>(at - before->at).count();
  return CounterIncrease(before->total, total) / seconds;
}

}  // namespace eoc::signals
