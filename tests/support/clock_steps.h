// Steps for tests that drive a loop on a ManualClock: wait until the loop sleeps, read how long,
// and move the clock on. Real time passes only while waiting for the loop's thread to get there.
//
//   EXPECT_EQ(AwaitSleep(clock, seconds(2)), seconds(2));  // the loop's next wait, exactly
//   clock.Advance(seconds(2));
#pragma once

#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace eoc::kube::testing {

// Waits until a thread sleeps on `clock` for `expected` from now (a loop that was woken takes a
// moment to sleep again), up to 10 s of real time; returns the sleep seen last (nullopt: none), so
// that EXPECT_EQ(AwaitSleep(clock, d), d) shows a wrong wait.
inline std::optional<std::chrono::nanoseconds> AwaitSleep(const ManualClock& clock,
                                                          std::chrono::nanoseconds expected) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::optional<std::chrono::nanoseconds> seen;
  do {
    seen = clock.AwaitTimedSleep(std::chrono::milliseconds(10));
    if (seen == expected) return seen;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } while (std::chrono::steady_clock::now() < give_up);
  return seen;
}

// Runs `call` on a thread of its own, moving `clock` on over each sleep of that thread (the only
// one sleeping on `clock`), until it returns; `slept`, if given, gets each sleep's length.
template <class Call>
auto CallAdvancing(ManualClock& clock, Call call,
                   std::vector<std::chrono::nanoseconds>* slept = nullptr) {
  auto result = std::async(std::launch::async, std::move(call));
  while (result.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    const auto sleep = clock.AwaitTimedSleep(std::chrono::milliseconds(1));
    if (!sleep) continue;
    if (slept != nullptr) slept->push_back(*sleep);
    clock.Advance(*sleep);
  }
  return result.get();
}

}  // namespace eoc::kube::testing
