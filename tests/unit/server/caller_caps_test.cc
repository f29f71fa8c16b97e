#include "server/caller_caps.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace eoc::server {
namespace {

using Cap = CallerCaps::Cap;

TEST(CallerCapsTest, ACallerIsCappedInEachPoolApart) {
  CallerCaps caps({.max_waiting_per_caller = 2, .max_waiting_per_user = 0});
  const CallerCaps::Key chat{.caller = "alice", .pool = "ns/chat"};
  const CallerCaps::Key code{.caller = "alice", .pool = "ns/code"};
  std::vector<std::shared_ptr<CallerCaps::Place>> places;
  EXPECT_EQ(caps.Full(chat), Cap::kNone);
  places.push_back(caps.Take(chat));
  places.push_back(caps.Take(chat));
  EXPECT_EQ(caps.Full(chat), Cap::kCaller);
  EXPECT_EQ(caps.Full(code), Cap::kNone) << "another pool is another count";
  EXPECT_EQ(caps.Full({.caller = "bob", .pool = "ns/chat"}), Cap::kNone) << "another caller";
  places[0]->GiveBack();
  places[0]->GiveBack();  // once only
  EXPECT_EQ(caps.Waiting(chat), 1U);
  EXPECT_EQ(caps.Full(chat), Cap::kNone);
  places.clear();  // the destructor gives back the rest
  EXPECT_EQ(caps.Waiting(chat), 0U);
}

TEST(CallerCapsTest, EndUsersAreCappedWithinTheirCallersShareWhichVaryingTheKeyDoesNotRaise) {
  CallerCaps caps({.max_waiting_per_caller = 3, .max_waiting_per_user = 1});
  const auto as = [](std::string_view user) {
    return CallerCaps::Key{.caller = "gateway", .pool = "ns/chat", .user = user};
  };
  const auto first = caps.Take(as("u1"));
  EXPECT_EQ(caps.Full(as("u1")), Cap::kUser);
  EXPECT_EQ(caps.Full(as("u2")), Cap::kNone);
  const auto second = caps.Take(as("u2"));
  const auto third = caps.Take(as("u3"));
  EXPECT_EQ(caps.Full(as("u4")), Cap::kCaller) << "new keys do not pass the caller's cap";
}

TEST(CallerCapsTest, AnAnonymousCallerHasOnlyItsEndUsersCapped) {
  CallerCaps caps({.max_waiting_per_caller = 1, .max_waiting_per_user = 1});
  const CallerCaps::Key nobody{.pool = "ns/chat"};
  const auto a = caps.Take(nobody);
  const auto b = caps.Take(nobody);
  EXPECT_EQ(caps.Full(nobody), Cap::kNone) << "without access control, only maxQueue bounds";
  const CallerCaps::Key user{.pool = "ns/chat", .user = "u1"};
  const auto c = caps.Take(user);
  EXPECT_EQ(caps.Full(user), Cap::kUser);
}

}  // namespace
}  // namespace eoc::server
