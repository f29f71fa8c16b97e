// Polls a condition until it holds or a limit passes: for tests that wait on something another
// process or thread makes happen.
//
//   ASSERT_TRUE(eoc::testing::Eventually([&] { return pods.Size() == 3; },
//   std::chrono::seconds(30)));
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace eoc::testing {

// True as soon as `done` returns true; false when `limit` passes first (checked once more then).
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::steady_clock::duration limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace eoc::testing
