// Tokens per second from an engine's two token counters (prompt and generated), scrape by
// scrape, robust to counter resets: a counter lower than at the last scrape means the engine
// restarted, and its new value is taken as the increase since the restart, as Prometheus' rate()
// does (the rule of counter_rate.h); a rate is never negative. The first scrape gives no rate. Time
// is passed in, never read.
//
//   TokenRate rate;
//   rate.Add(t0, /*prompt_total=*/1000, /*generation_total=*/500);            // nullopt
//   std::optional<TokenRate::Rate> r = rate.Add(t0 + 5s, 2000, 1000);
//   r->prompt_per_second        // 200
//   r->tokens_per_second()      // 300: prompt plus generated, what the Load reports
#pragma once

#include <chrono>
#include <optional>

namespace eoc::signals {

class TokenRate {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  struct Rate {
    double prompt_per_second = 0;
    double generation_per_second = 0;
    double tokens_per_second() const { return prompt_per_second + generation_per_second; }
  };

  // The rate over the interval since the last accepted scrape; nullopt for the first scrape, and
  // for one at or before the last one (it is ignored). A total that is negative or not finite
  // gives no rate and forgets the last scrape, so the next one starts afresh.
  std::optional<Rate> Add(TimePoint at, double prompt_total, double generation_total);

  // Forgets the last scrape (the worker left, or its metrics were unavailable for long).
  void Reset() { last_.reset(); }

 private:
  struct Scrape {
    TimePoint at;
    double prompt_total = 0;
    double generation_total = 0;
  };
  std::optional<Scrape> last_;
};

}  // namespace eoc::signals
