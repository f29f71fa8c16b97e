#include "common/clock.h"

#include <thread>

namespace eoc {

std::size_t ManualClock::Sleepers() const {
  const std::lock_guard lock(mu_);
  std::size_t sleepers = 0;
  for (Wakeup* wakeup : wakeups_) {
    const std::lock_guard sleeper(wakeup->mu_);
    sleepers += wakeup->deadlines_.size();
  }
  return sleepers;
}

std::optional<Clock::TimePoint> ManualClock::NextDeadline() const {
  const std::lock_guard lock(mu_);
  std::optional<TimePoint> next;
  for (Wakeup* wakeup : wakeups_) {
    const std::lock_guard sleeper(wakeup->mu_);
    for (const TimePoint deadline : wakeup->deadlines_) {
      if (!next || deadline < *next) next = deadline;
    }
  }
  return next;
}

bool ManualClock::AwaitSleepers(std::size_t n, std::chrono::milliseconds timeout) const {
  // Real time on purpose: this waits for other threads to reach their sleep, which no clock of
  // the test's can move.
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (Sleepers() < n) {
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::optional<std::chrono::nanoseconds> ManualClock::AwaitTimedSleep(
    std::chrono::milliseconds timeout) const {
  // Real time, as AwaitSleepers. A sleeper whose deadline has come is leaving: not counted.
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      const std::lock_guard lock(mu_);
      const TimePoint now = Now();
      std::optional<TimePoint> next;
      for (Wakeup* wakeup : wakeups_) {
        const std::lock_guard sleeper(wakeup->mu_);
        for (const TimePoint deadline : wakeup->deadlines_) {
          if (deadline > now && deadline != TimePoint::max() && (!next || deadline < *next)) {
            next = deadline;
          }
        }
      }
      if (next) return *next - now;
    }
    if (std::chrono::steady_clock::now() >= give_up) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool ManualClock::AdvanceToNextDeadline() {
  const std::optional<TimePoint> next = NextDeadline();
  if (!next || *next == TimePoint::max()) return false;
  const TimePoint now = Now();
  Advance(*next > now ? *next - now : std::chrono::nanoseconds::zero());
  return true;
}

}  // namespace eoc
