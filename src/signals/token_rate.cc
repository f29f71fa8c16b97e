#include "signals/token_rate.h"

#include "signals/counter_rate.h"

namespace eoc::signals {

std::optional<TokenRate::Rate> TokenRate::Add(TimePoint at, double prompt_total,
                                              double generation_total) {
  if (!IsCounterTotal(prompt_total) || !IsCounterTotal(generation_total)) {
    last_.reset();
    return std::nullopt;
  }
  if (last_ && at <= last_->at) return std::nullopt;
  const std::optional<Scrape> before = last_;
  last_ = Scrape{at, prompt_total, generation_total};
  if (!before) return std::nullopt;
  const double seconds = std::chrono::duration<double>(at - before->at).count();
  return Rate{
      .prompt_per_second = CounterIncrease(before->prompt_total, prompt_total) / seconds,
      .generation_per_second =
          CounterIncrease(before->generation_total, generation_total) / seconds,
  };
}

}  // namespace eoc::signals
