// Counts the heap allocations made by one thread between Start() and Stop(), through a
// replacement of the global operator new (in allocation_counter.cc): for tests that show code
// allocates nothing.
//
//   eoc::api::testing::AllocationCounter counter;
//   counter.Start();
//   selector.Matches(labels);
//   EXPECT_EQ(counter.Stop(), 0);
#pragma once

namespace eoc::api::testing {

class AllocationCounter {
 public:
  void Start();
  // The allocations this thread made since Start().
  int Stop();
};

}  // namespace eoc::api::testing
