#include "server/caller_caps.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace eoc::server {
namespace {

using Cap = CallerCaps::Cap;
using std::chrono::seconds;

// The waiting cap a new pick of `key` would pass (no reservation metered).
Cap WaitingCap(const CallerCaps& caps, const CallerCaps::Key& key) {
  return caps.Check(key, {}, {}).waiting;
}

TEST(CallerCapsTest, ACallerIsCappedInEachPoolApart) {
  CallerCaps caps({.max_waiting_per_caller = 2, .max_waiting_per_user = 0});
  const CallerCaps::Key chat{.caller = "alice", .pool = "ns/chat"};
  const CallerCaps::Key code{.caller = "alice", .pool = "ns/code"};
  std::vector<std::shared_ptr<CallerCaps::Place>> places;
  EXPECT_EQ(WaitingCap(caps, chat), Cap::kNone);
  places.push_back(caps.Take(chat));
  places.push_back(caps.Take(chat));
  EXPECT_EQ(WaitingCap(caps, chat), Cap::kCaller);
  EXPECT_EQ(WaitingCap(caps, code), Cap::kNone) << "another pool is another count";
  EXPECT_EQ(WaitingCap(caps, {.caller = "bob", .pool = "ns/chat"}), Cap::kNone) << "another caller";
  places[0]->GiveBack();
  places[0]->GiveBack();  // once only
  EXPECT_EQ(caps.Waiting(chat), 1U);
  EXPECT_EQ(WaitingCap(caps, chat), Cap::kNone);
  places.clear();  // the destructor gives back the rest
  EXPECT_EQ(caps.Waiting(chat), 0U);
}

TEST(CallerCapsTest, EndUsersAreCappedWithinTheirCallersShareWhichVaryingTheKeyDoesNotRaise) {
  CallerCaps caps({.max_waiting_per_caller = 3, .max_waiting_per_user = 1});
  const auto as = [](std::string_view user) {
    return CallerCaps::Key{.caller = "gateway", .pool = "ns/chat", .user = user};
  };
  const auto first = caps.Take(as("u1"));
  EXPECT_EQ(WaitingCap(caps, as("u1")), Cap::kUser);
  EXPECT_EQ(WaitingCap(caps, as("u2")), Cap::kNone);
  const auto second = caps.Take(as("u2"));
  const auto third = caps.Take(as("u3"));
  EXPECT_EQ(WaitingCap(caps, as("u4")), Cap::kCaller) << "new keys do not pass the caller's cap";
}

TEST(CallerCapsTest, AnAnonymousCallerHasOnlyItsEndUsersCapped) {
  CallerCaps caps({.max_waiting_per_caller = 1, .max_waiting_per_user = 1});
  const CallerCaps::Key nobody{.pool = "ns/chat"};
  const auto a = caps.Take(nobody);
  const auto b = caps.Take(nobody);
  EXPECT_EQ(WaitingCap(caps, nobody), Cap::kNone) << "without access control, only maxQueue bounds";
  const CallerCaps::Key user{.pool = "ns/chat", .user = "u1"};
  const auto c = caps.Take(user);
  EXPECT_EQ(WaitingCap(caps, user), Cap::kUser);
}

// A pool of 1,000 tokens of KV cache scraped every 10 s: at a share of 0.5 a caller may reserve
// 500 tokens per 10 s while others wait.
constexpr CallerCaps::Reservation Reserve(std::int64_t tokens) {
  return {.tokens = tokens, .capacity_tokens = 1000, .window = seconds(10)};
}

TEST(CallerCapsTest, ACallerOverItsReservedShareIsRefusedOnlyWhileOthersWaitAndUntilItIsPaidOff) {
  CallerCaps caps({.max_reserved_share = 0.5, .max_reserved_share_per_user = 0});
  const CallerCaps::Key batch{.caller = "batch", .pool = "ns/chat"};
  const CallerCaps::Key gateway{.caller = "gateway", .pool = "ns/chat"};
  const CallerCaps::Key elsewhere{.caller = "gateway", .pool = "ns/code"};
  const CallerCaps::TimePoint t0{seconds(1000)};
  caps.Charge(batch, Reserve(750), t0);  // 1.5 windows' worth: paid off at t0 + 15 s
  EXPECT_EQ(caps.Check(batch, Reserve(10), t0).share, Cap::kNone) << "alone, it may use it all";
  auto other_pool = caps.Take(elsewhere);
  EXPECT_EQ(caps.Check(batch, Reserve(10), t0).share, Cap::kNone) << "others wait elsewhere";
  auto own = caps.Take(batch);
  EXPECT_EQ(caps.Check(batch, Reserve(10), t0).share, Cap::kNone) << "only its own picks wait";
  auto waiting = caps.Take(gateway);
  const auto over = caps.Check(batch, Reserve(10), t0);
  EXPECT_EQ(over.share, Cap::kCaller);
  EXPECT_EQ(over.retry_after, seconds(5)) << "until what is left is under one window's share";
  EXPECT_EQ(caps.Check(gateway, Reserve(10), t0).share, Cap::kNone) << "the waiting one is under";
  EXPECT_EQ(caps.Check(batch, Reserve(10), t0 + seconds(5)).share, Cap::kCaller);
  EXPECT_EQ(caps.Check(batch, Reserve(10), t0 + seconds(5) + std::chrono::nanoseconds(1)).share,
            Cap::kNone);
  waiting.reset();
  EXPECT_EQ(caps.Check(batch, Reserve(10), t0).share, Cap::kNone) << "nobody else waits now";
}

TEST(CallerCapsTest, ABurstWeighsOnItsCallerForAtMostFourWindows) {
  CallerCaps caps({.max_reserved_share = 0.5});
  const CallerCaps::Key batch{.caller = "batch", .pool = "ns/chat"};
  const CallerCaps::TimePoint t0{seconds(1000)};
  for (int i = 0; i < 100; ++i) caps.Charge(batch, Reserve(1000), t0);
  auto waiting = caps.Take({.caller = "gateway", .pool = "ns/chat"});
  EXPECT_EQ(caps.Check(batch, Reserve(10), t0).retry_after, seconds(30));
  EXPECT_EQ(caps.Check(batch, Reserve(10), t0 + seconds(31)).share, Cap::kNone);
}

TEST(CallerCapsTest, AnEndUserOverItsShareIsRefusedWhileItsCallersOtherEndUsersWait) {
  CallerCaps caps({.max_reserved_share = 0.5, .max_reserved_share_per_user = 0.1});
  const auto as = [](std::string_view user) {
    return CallerCaps::Key{.caller = "gateway", .pool = "ns/chat", .user = user};
  };
  const CallerCaps::TimePoint t0{seconds(1000)};
  caps.Charge(as("u1"), Reserve(100), t0);  // its whole share of 100 tokens per window
  auto another_caller = caps.Take({.caller = "batch", .pool = "ns/chat"});
  EXPECT_EQ(caps.Check(as("u1"), Reserve(10), t0).share, Cap::kNone)
      << "other callers' picks do not make an end user's share bind, its caller's does";
  auto other_user = caps.Take(as("u2"));
  EXPECT_EQ(caps.Check(as("u1"), Reserve(10), t0).share, Cap::kUser);
  EXPECT_EQ(caps.Check(as("u3"), Reserve(10), t0).share, Cap::kNone) << "a new key owes nothing";
  // Without access control there is no caller: every other pick in the pool counts as others.
  const CallerCaps::Key anonymous{.pool = "ns/code", .user = "u1"};
  caps.Charge(anonymous, Reserve(100), t0);
  auto someone = caps.Take({.pool = "ns/code"});
  EXPECT_EQ(caps.Check(anonymous, Reserve(10), t0).share, Cap::kUser);
}

TEST(CallerCapsTest, APoolWithoutKvDataOrAShareOfZeroIsNotMetered) {
  CallerCaps caps({.max_reserved_share = 0.5, .max_reserved_share_per_user = 0});
  const CallerCaps::Key batch{.caller = "batch", .pool = "ns/chat", .user = "u1"};
  const CallerCaps::TimePoint t0{seconds(1000)};
  caps.Charge(batch, {.tokens = 10'000, .capacity_tokens = 0, .window = seconds(10)}, t0);
  EXPECT_EQ(caps.Meters(), 0U);
  caps.Charge(batch, Reserve(10'000), t0);
  EXPECT_EQ(caps.Meters(), 1U) << "the caller's meter only: the end users' share is 0";
  auto waiting = caps.Take({.caller = "gateway", .pool = "ns/chat"});
  EXPECT_EQ(caps.Check(batch, {.tokens = 1, .capacity_tokens = 0, .window = seconds(10)}, t0).share,
            Cap::kNone)
      << "no worker reports its KV cache now: nothing is reserved";
}

TEST(CallerCapsTest, TheMetersAreBoundedAndPaidOffKeysMakeRoom) {
  CallerCaps caps({.max_reserved_share = 0.5, .max_reserved_share_per_user = 0.5});
  const CallerCaps::TimePoint t0{seconds(1000)};
  std::vector<std::string> users(CallerCaps::kMaxMeters);
  for (std::size_t i = 0; i < users.size(); ++i) users[i] = "u" + std::to_string(i);
  // One caller's end users fill the table (its own meter is one of them).
  for (std::size_t i = 0; i + 1 < users.size(); ++i) {
    caps.Charge({.caller = "gateway", .pool = "ns/chat", .user = users[i]}, Reserve(1), t0);
  }
  EXPECT_EQ(caps.Meters(), CallerCaps::kMaxMeters);
  const CallerCaps::Key late{.caller = "batch", .pool = "ns/chat"};
  caps.Charge(late, Reserve(1000), t0);
  EXPECT_EQ(caps.Meters(), CallerCaps::kMaxMeters) << "full: a new key is not metered";
  auto waiting = caps.Take({.caller = "gateway", .pool = "ns/chat"});
  EXPECT_EQ(caps.Check(late, Reserve(1), t0).share, Cap::kNone);
  // Once the end users' debts are paid off (1 token at 500 per 10 s: 20 ms), the next new key
  // clears them out and is metered.
  caps.Charge(late, Reserve(1000), t0 + seconds(1));
  EXPECT_EQ(caps.Check(late, Reserve(1), t0 + seconds(1)).share, Cap::kCaller);
  EXPECT_LT(caps.Meters(), 3U) << "the gateway's own meter was paid off too";
}

}  // namespace
}  // namespace eoc::server
