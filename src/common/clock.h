// Time as an injected dependency, so that tests and the simulator drive the same code that runs in
// production (DESIGN.md, "Rules of the house").
//
//   eoc::SystemClock clock;
//   auto deadline = clock.Now() + std::chrono::seconds(5);
//   if (clock.WallNow() > token_expiry) { ... }
#pragma once

#include <chrono>

namespace eoc {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time, for intervals, deadlines and rate limits.
  virtual std::chrono::steady_clock::time_point Now() const = 0;
  // Wall-clock time, only for comparing against timestamps that come from elsewhere (token expiry).
  virtual std::chrono::system_clock::time_point WallNow() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::now();
  }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::now();
  }
};

// The process's one system clock, for production wiring.
inline const Clock& RealClock() {
  static const SystemClock clock;
  return clock;
}

// A clock that moves only when told to; for tests.
class ManualClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override { return now_; }
  std::chrono::system_clock::time_point WallNow() const override { return wall_; }
  void Advance(std::chrono::nanoseconds d) {
    now_ += d;
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  }
  void SetWall(std::chrono::system_clock::time_point t) { wall_ = t; }

 private:
  std::chrono::steady_clock::time_point now_{std::chrono::hours(1)};
  std::chrono::system_clock::time_point wall_{std::chrono::hours(24 * 365 * 50)};
};

}  // namespace eoc
