// Time as an injected dependency, so that tests and the simulator drive the same code that runs in
// production (DESIGN.md, "Rules of the house"): reading the time, and sleeping until a time or
// until something changes.
//
//   eoc::SystemClock clock;
//   auto deadline = clock.Now() + std::chrono::seconds(5);
//   if (clock.WallNow() > token_expiry) { ... }
//
//   // A loop that sleeps between rounds and stops promptly (stopping_ is a std::atomic<bool>):
//   eoc::Wakeup wake(clock);
//   while (!wake.SleepFor(period, [&] { return stopping_.load(); })) RunOnce();
//   // Stop(), from another thread:
//   stopping_ = true;
//   wake.Notify();
//
// A test drives that loop on a ManualClock, without real time passing:
//   eoc::ManualClock clock;
//   ... start the loop on its thread ...
//   ASSERT_TRUE(clock.AwaitSleepers(1));   // the loop is asleep
//   clock.Advance(period);                 // and wakes for its next round
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace eoc {

class Wakeup;

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // Monotonic time, for intervals, deadlines and rate limits.
  virtual TimePoint Now() const = 0;
  // Wall-clock time, only for comparing against timestamps that come from elsewhere (token expiry).
  virtual std::chrono::system_clock::time_point WallNow() const = 0;

 private:
  friend class Wakeup;
  // Blocks on `cv` (whose mutex `lock` holds) until it is notified or, on this clock, `deadline`
  // passes; may return early (callers check again).
  virtual void WaitOn(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                      TimePoint deadline) const = 0;
  // A Wakeup on this clock comes or goes (ManualClock wakes its sleepers when time moves).
  virtual void Attach(Wakeup& /*wakeup*/) const {}
  virtual void Detach(Wakeup& /*wakeup*/) const {}
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::now();
  }

 private:
  void WaitOn(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
              TimePoint deadline) const override {
    if (deadline == TimePoint::max()) {
      cv.wait(lock);
    } else {
      cv.wait_until(lock, deadline);
    }
  }
};

// The process's one system clock, for production wiring.
inline const Clock& RealClock() {
  static const SystemClock clock;
  return clock;
}

// What a loop sleeps on: until a time passes on its clock, or until another thread calls Notify()
// after changing what the loop checks (a stop flag, new work). Thread-safe; the clock must outlive
// it.
class Wakeup {
 public:
  explicit Wakeup(const Clock& clock) : clock_(clock) { clock_.Attach(*this); }
  ~Wakeup() { clock_.Detach(*this); }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  Wakeup(Wakeup&&) = delete;
  Wakeup& operator=(Wakeup&&) = delete;

  const Clock& clock() const { return clock_; }

  // Wakes every sleeper: each checks its condition again (or, sleeping on a ticket, returns).
  void Notify() {
    {
      const std::lock_guard lock(mu_);
      ++notifications_;
    }
    cv_.notify_all();
  }

  // Sleeps until `done()` holds or `deadline` passes on the clock; returns done(). `done` runs
  // with this Wakeup's mutex held, so what it reads must be atomics (or be written only before a
  // Notify() under a lock of the writer's own): set the flag, then Notify().
  template <typename Done>
  bool SleepUntil(Clock::TimePoint deadline, Done done) {
    std::unique_lock lock(mu_);
    if (done()) return true;
    const Sleeping sleeping(*this, deadline);
    while (!done()) {
      if (clock_.Now() >= deadline) return false;
      clock_.WaitOn(cv_, lock, deadline);
    }
    return true;
  }
  template <typename Done>
  bool SleepFor(std::chrono::nanoseconds duration, Done done) {
    return SleepUntil(Deadline(duration), std::move(done));
  }

  // For loops that look at state of their own between sleeps (a queue of due times): take a
  // ticket before looking, then SleepUntilNotified(deadline, ticket) returns at the deadline or as
  // soon as a Notify() has come since the ticket (at once if one came while looking).
  using Ticket = std::uint64_t;
  Ticket TakeTicket() {
    const std::lock_guard lock(mu_);
    return notifications_;
  }
  // True when woken by a Notify(), false at the deadline.
  bool SleepUntilNotified(Clock::TimePoint deadline, Ticket ticket) {
    return SleepUntil(deadline, [&] { return notifications_ != ticket; });
  }

  // Now() + duration, saturating at the far future (so "forever" does not overflow).
  Clock::TimePoint Deadline(std::chrono::nanoseconds duration) const {
    const Clock::TimePoint now = clock_.Now();
    if (duration <= std::chrono::nanoseconds::zero()) return now;
    if (duration >= Clock::TimePoint::max() - now) return Clock::TimePoint::max();
    return now + duration;
  }

 private:
  friend class ManualClock;

  // Registers a sleeper's deadline for the clock's inspection (ManualClock::Sleepers()).
  class Sleeping {
   public:
    Sleeping(Wakeup& wakeup, Clock::TimePoint deadline) : wakeup_(wakeup), deadline_(deadline) {
      wakeup_.deadlines_.push_back(deadline_);
    }
    ~Sleeping() {
      auto& deadlines = wakeup_.deadlines_;
      deadlines.erase(std::find(deadlines.begin(), deadlines.end(), deadline_));
    }
    Sleeping(const Sleeping&) = delete;
    Sleeping& operator=(const Sleeping&) = delete;
    Sleeping(Sleeping&&) = delete;
    Sleeping& operator=(Sleeping&&) = delete;

   private:
    Wakeup& wakeup_;
    Clock::TimePoint deadline_;
  };

  const Clock& clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t notifications_ = 0;          // guarded by mu_
  std::vector<Clock::TimePoint> deadlines_;  // of the threads asleep now; guarded by mu_
};

// A clock that moves only when told to; for tests. Thread-safe: one thread may Advance() it while
// others read it or sleep on it.
class ManualClock final : public Clock {
 public:
  TimePoint Now() const override { return TimePoint(std::chrono::nanoseconds(now_.load())); }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(wall_.load())));
  }

  // Moves both clocks forward and wakes every sleeper on this clock (each checks its deadline).
  void Advance(std::chrono::nanoseconds d) {
    const std::lock_guard lock(mu_);
    now_ += d.count();
    wall_ += d.count();
    for (Wakeup* wakeup : wakeups_) {
      // Taking the wakeup's mutex orders this after a sleeper's check of the time: it is then
      // either past the new time or waiting, and woken.
      { const std::lock_guard sleeper(wakeup->mu_); }
      wakeup->cv_.notify_all();
    }
  }
  void SetWall(std::chrono::system_clock::time_point t) {
    wall_ = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }

  // Threads asleep on this clock now, and the earliest of their deadlines (none: nullopt).
  std::size_t Sleepers() const;
  std::optional<TimePoint> NextDeadline() const;
  // Waits, in real time up to `timeout`, until at least `n` threads sleep on this clock: a test
  // calls it before Advance() so that the loop it drives has computed its deadline.
  bool AwaitSleepers(std::size_t n,
                     std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // Waits, in real time up to `timeout`, until a thread sleeps on this clock until a time after
  // Now() (not "forever"); returns how long from Now() the earliest such sleep lasts (nullopt on
  // timeout). A test reads a loop's next wait with it, then Advance()s by that much.
  std::optional<std::chrono::nanoseconds> AwaitTimedSleep(
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // Advances to the earliest sleeper's deadline (none asleep: does nothing); whether it did.
  bool AdvanceToNextDeadline();

 private:
  void WaitOn(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
              TimePoint /*deadline*/) const override {
    cv.wait(lock);  // Advance() wakes it
  }
  void Attach(Wakeup& wakeup) const override {
    const std::lock_guard lock(mu_);
    wakeups_.push_back(&wakeup);
  }
  void Detach(Wakeup& wakeup) const override {
    const std::lock_guard lock(mu_);
    wakeups_.erase(std::find(wakeups_.begin(), wakeups_.end(), &wakeup));
  }

  std::atomic<std::int64_t> now_{std::chrono::nanoseconds(std::chrono::hours(1)).count()};
  std::atomic<std::int64_t> wall_{
      std::chrono::nanoseconds(std::chrono::hours(24 * 365 * 50)).count()};
  // Lock order: mu_, then a Wakeup's mutex (a sleeper holds its Wakeup's mutex and never takes
  // mu_; Attach and Detach take mu_ alone).
  mutable std::mutex mu_;
  mutable std::vector<Wakeup*> wakeups_;  // guarded by mu_
};

}  // namespace eoc
