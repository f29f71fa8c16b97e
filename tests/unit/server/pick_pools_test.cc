// The pick endpoint's table of pools: one lookup gives a pool's state and its HTTP settings.
#include "server/pick_pools.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

#include "routing/session_table.h"

namespace eoc::server {
namespace {

class PickPoolsTest : public ::testing::Test {
 protected:
  // The states are retired as the pool directory retires a pool that goes: a thread's cache of
  // the table (published.h) may hold them past the test, and a state that is destroyed later must
  // not give its sessions back to the test's budget, gone by then.
  ~PickPoolsTest() override {
    for (const auto& state : states_) state->Retire();
  }

  std::shared_ptr<routing::PoolState> NewState() {
    states_.push_back(std::make_shared<routing::PoolState>(routing::PoolState::Options{}, budget_,
                                                           prefix_budget_));
    return states_.back();
  }

  routing::SessionBudget budget_{1000};
  routing::PrefixBudget prefix_budget_;
  PickPools pools_;
  std::vector<std::shared_ptr<routing::PoolState>> states_;
};

TEST_F(PickPoolsTest, FindsWhatWasSetUntilItIsRemoved) {
  EXPECT_EQ(pools_.Find("prod/chat"), nullptr);
  const auto state = NewState();
  pools_.Set("prod/chat", state, {.session_header = "x-conversation"});
  const auto entry = pools_.Find("prod/chat");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->state, state);
  EXPECT_EQ(entry->http.session_header, "x-conversation");
  EXPECT_EQ(entry->http.queue_timeout, std::chrono::seconds(120)) << "the CRD's default";
  EXPECT_EQ(pools_.Find("prod/other"), nullptr);
  EXPECT_EQ(pools_.Size(), 1U);

  EXPECT_TRUE(pools_.Remove("prod/chat"));
  EXPECT_EQ(pools_.Find("prod/chat"), nullptr);
  EXPECT_FALSE(pools_.Remove("prod/chat"));
  EXPECT_EQ(entry->state, state) << "an entry a pick holds stays valid";
}

TEST_F(PickPoolsTest, ASetReplacesTheSettingsAndTheStateAndAnUnchangedOneKeepsTheMap) {
  const auto state = NewState();
  pools_.Set("prod/chat", state, {});
  const PickPools::Entry* before = pools_.Find("prod/chat").get();
  pools_.Set("prod/chat", state, {});
  EXPECT_EQ(pools_.Find("prod/chat").get(), before) << "nothing changed: the same map";

  pools_.Set("prod/chat", state, {.queue_timeout = std::chrono::seconds(5)});
  EXPECT_EQ(pools_.Find("prod/chat")->http.queue_timeout, std::chrono::seconds(5));
  const auto other = NewState();
  pools_.Set("prod/chat", other, {.queue_timeout = std::chrono::seconds(5)});
  EXPECT_EQ(pools_.Find("prod/chat")->state, other);
  EXPECT_EQ(pools_.Size(), 1U);
}

TEST_F(PickPoolsTest, ANullStateIsRefused) {
  EXPECT_THROW(pools_.Set("prod/chat", nullptr, {}), std::invalid_argument);
  EXPECT_EQ(pools_.Find("prod/chat"), nullptr);
}

}  // namespace
}  // namespace eoc::server
