// PoolState's bounds on what waits: how long a pick that cannot be placed holds the picks of its
// model behind it (Options::hold), and what a pick may ask for (the largest worker seen, and
// Options::max_request_tokens), also while the pool has no worker.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "pool_state_fixture.h"
#include "routing/pool_state.h"

namespace eoc::routing::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Log = std::vector<std::pair<std::string, std::string>>;  // (name, where or status)

class PoolStateAdmissionTest : public PoolStateTest {
 protected:
  PickOutcome Wait(const PickRequest& request, const std::string& name) {
    return state_->Pick(request, rng_(), now_,
                        {.deadline = now_ + seconds(30), .make_done = [this, name] {
                           return [this, name](const PickOutcome& out) {
                             log_.emplace_back(name, Where(out));
                           };
                         }});
  }
  static PoolState::Options WaitingWithoutWorkers() {
    PoolState::Options options = DefaultOptions();
    options.wait_without_workers = true;
    return options;
  }

  Log log_;
};

// 640 tokens: 40 blocks of 16; a pick by default needs 10.
constexpr PickRequest kBig{.prompt_tokens = 600, .expected_tokens = 40};

TEST_F(PoolStateAdmissionTest, SmallPicksPassABigOneAfterItsHoldAndTheBigOneRunsWhenRoomComes) {
  Start(Workers(1));  // a hold of 5 s
  Observe(0, LoadOf(0, 20));
  EXPECT_EQ(Wait(kBig, "big").status, PickStatus::kQueued);
  now_ += seconds(1);
  EXPECT_EQ(Wait({}, "small").status, PickStatus::kQueued) << "held behind the big one";
  now_ = kT0 + seconds(5) - milliseconds(1);
  Observe(0, LoadOf(0, 20));
  EXPECT_TRUE(log_.empty()) << "within the big one's hold, the small one stays behind it";
  now_ = kT0 + seconds(5);
  Observe(0, LoadOf(0, 20));
  EXPECT_EQ(log_, (Log{{"small", PodOf(0)}})) << "the hold is over: it fits, so it passes";
  // The big one keeps its place: offered first when room comes, ahead of a later small pick.
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Wait({}, "later").status, PickStatus::kQueued);
  now_ += seconds(1);
  Observe(0, LoadOf(0, 45));  // room for the big one, then for nothing more
  EXPECT_EQ(log_, (Log{{"small", PodOf(0)}, {"big", PodOf(0)}}));
  Observe(0, LoadOf(0, 10));
  EXPECT_EQ(log_, (Log{{"small", PodOf(0)}, {"big", PodOf(0)}, {"later", PodOf(0)}}));
  EXPECT_EQ(state_->Waiting(), 0U);
}

TEST_F(PoolStateAdmissionTest, NewPicksQueueBehindAWaitingOneOnlyDuringItsHold) {
  PoolState::Options options = DefaultOptions();
  options.hold = seconds(2);
  Start({MakeWorker(0, 1000, {"llama"})}, Strategy::kJouleWeighted, options);
  Observe(0, LoadOf(0, 20));
  EXPECT_EQ(Wait({.model = "llama", .prompt_tokens = 600, .expected_tokens = 40}, "big").status,
            PickStatus::kQueued);
  now_ = kT0 + seconds(2) - milliseconds(1);
  EXPECT_EQ(Pick({.model = "llama"}).status, PickStatus::kNoRoom) << "held";
  now_ = kT0 + seconds(2);
  EXPECT_EQ(Where(Pick({.model = "llama"})), PodOf(0)) << "the hold is over and it fits";
  EXPECT_EQ(Where(Pick({.model = "llama"})), PodOf(0));
  EXPECT_EQ(Pick({.model = "llama"}).status, PickStatus::kNoRoom) << "no room left";
  EXPECT_EQ(state_->Waiting(), 1U);
  EXPECT_TRUE(log_.empty());
}

TEST_F(PoolStateAdmissionTest, APoolScaledToZeroStillRefusesPicksLargerThanItsLargestWorker) {
  Start(Workers(2), Strategy::kJouleWeighted, WaitingWithoutWorkers());
  Observe(0, {.kv_blocks_total = 100, .kv_blocks_free = 100, .block_size = 16, .available = true});
  Observe(1, {.kv_blocks_total = 300, .kv_blocks_free = 300, .block_size = 16, .available = true});
  Publish(Workers(0));  // scaled to zero
  const PickOutcome big = Wait({.prompt_tokens = 4800, .expected_tokens = 1}, "big");
  EXPECT_EQ(big.status, PickStatus::kTooLarge) << "300 blocks of 16 tokens at most: 4,800";
  EXPECT_EQ(big.blocks_needed, 301);
  EXPECT_EQ(big.blocks_largest, 300);
  EXPECT_EQ(Wait({.prompt_tokens = 4799, .expected_tokens = 1}, "fits").status,
            PickStatus::kQueued);
  // A worker that has not reported its cache yet changes nothing; one that has, bounds anew.
  Publish(Workers(1));
  EXPECT_EQ(log_, (Log{{"fits", PodOf(0)}}));
  EXPECT_EQ(Pick({.prompt_tokens = 4800, .expected_tokens = 1}).status, PickStatus::kTooLarge);
  Observe(0, {.kv_blocks_total = 400, .kv_blocks_free = 400, .block_size = 16, .available = true});
  EXPECT_TRUE(Pick({.prompt_tokens = 4800, .expected_tokens = 1}).picked());
}

// What a pick would reserve, for callers' shares (CallerCaps): its tokens with the defaults, the
// KV caches of the pool's workers as they last reported them, and the scrape interval.
TEST_F(PoolStateAdmissionTest, AReservationCountsThePicksTokensAndTheWorkersReportedCaches) {
  PoolState::Options options = DefaultOptions();
  options.hold = seconds(7);
  Start(Workers(3), Strategy::kJouleWeighted, options);
  EXPECT_EQ(state_->ReservationOf({}).capacity_tokens, 0) << "none reported yet";
  Observe(0, {.kv_blocks_total = 100, .kv_blocks_free = 10, .block_size = 16, .available = true});
  Observe(1, {.kv_blocks_total = 300, .kv_blocks_free = 300, .block_size = 32, .available = true});
  const PoolState::Reservation r = state_->ReservationOf({.prompt_tokens = 100});
  EXPECT_EQ(r.tokens, 100 + options.default_expected_tokens);
  EXPECT_EQ(r.capacity_tokens, 100 * 16 + 300 * 32) << "all of each cache, free or not";
  EXPECT_EQ(r.window, seconds(7));
  Observe(1, {.available = false});  // its scrape fails: its cache is as last reported
  EXPECT_EQ(state_->ReservationOf({}).capacity_tokens, 100 * 16 + 300 * 32);
  Publish(Workers(1));  // worker 1 leaves the pool
  EXPECT_EQ(state_->ReservationOf({}).capacity_tokens, 100 * 16);
  EXPECT_EQ(state_->ReservationOf({}).tokens,
            options.default_prompt_tokens + options.default_expected_tokens);
}

TEST_F(PoolStateAdmissionTest, AWaitingPickFoundTooLargeAnswersSoWhenReleased) {
  Start(Workers(0), Strategy::kJouleWeighted, WaitingWithoutWorkers());
  // Nothing is known of any worker's cache: both wait.
  EXPECT_EQ(Wait({.model = "llama", .prompt_tokens = 4800, .expected_tokens = 1}, "big").status,
            PickStatus::kQueued);
  EXPECT_EQ(Wait({.model = "llama"}, "small").status, PickStatus::kQueued);
  Publish({MakeWorker(0, 1000, {"mistral"})});  // serves another model: both still wait
  EXPECT_TRUE(log_.empty());
  Observe(0, {.kv_blocks_total = 300, .kv_blocks_free = 300, .block_size = 16, .available = true});
  EXPECT_EQ(log_, (Log{{"big", "too-large"}})) << "answered at once, not at its deadline";
  EXPECT_EQ(state_->Waiting(), 1U);
}

TEST_F(PoolStateAdmissionTest, MaxRequestTokensBoundsPicksWithNoWorkerEverSeen) {
  PoolState::Options options = WaitingWithoutWorkers();
  options.max_request_tokens = 1000;
  Start(Workers(0), Strategy::kJouleWeighted, options);
  const PickOutcome big = Wait({.prompt_tokens = 900, .expected_tokens = 101}, "big");
  EXPECT_EQ(big.status, PickStatus::kTooLarge);
  EXPECT_EQ(big.tokens_asked, 1001);
  EXPECT_EQ(big.tokens_allowed, 1000);
  EXPECT_EQ(Pick({.prompt_tokens = 950}).status, PickStatus::kTooLarge) << "950 + 60 by default";
  EXPECT_EQ(Wait({.prompt_tokens = 900, .expected_tokens = 100}, "fits").status,
            PickStatus::kQueued);
  // A lower bound applies to the picks that wait too, when they are next offered room.
  options.max_request_tokens = 999;
  state_->Reconfigure(options, now_);
  EXPECT_EQ(log_, (Log{{"fits", "too-large"}}));
  // Whatever the workers hold.
  Publish(Workers(1));
  Observe(0, LoadOf(0));
  EXPECT_EQ(Pick({.prompt_tokens = 900, .expected_tokens = 100}).status, PickStatus::kTooLarge);
  EXPECT_TRUE(Pick({.prompt_tokens = 900, .expected_tokens = 99}).picked());
}

}  // namespace
}  // namespace eoc::routing::testing
