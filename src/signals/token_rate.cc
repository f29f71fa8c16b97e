#include "signals/token_rate.h"

#include <cmath>

namespace eoc::signals {
namespace {

// What a counter grew by: after a reset (a lower value), all of its new value.
double Increase(double before, double now) { return now >= before ? now - before : now; }

bool IsTotal(double value) { return std::isfinite(value) && value >= 0; }

}  // namespace

std::optional<TokenRate::Rate> TokenRate::Add(TimePoint at, double prompt_total,
                                              double generation_total) {
  if (!IsTotal(prompt_total) || !IsTotal(generation_total)) {
    last_.reset();
    return std::nullopt;
  }
  if (last_ && at <= last_->at) return std::nullopt;
  const std::optional<Scrape> before = last_;
  last_ = Scrape{at, prompt_total, generation_total};
  if (!before) return std::nullopt;
  const double seconds = std::chrono::duration<double>(at - before->at).count();
  return Rate{
      .prompt_per_second = Increase(before->prompt_total, prompt_total) / seconds,
      .generation_per_second = Increase(before->generation_total, generation_total) / seconds,
  };
}

}  // namespace eoc::signals
