// Shared set-up for the PoolState tests: a pool of workers, their loads, and picks.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "routing/ids.h"
#include "routing/pool_snapshot.h"
#include "routing/pool_state.h"
#include "routing/session_table.h"
#include "routing/worker.h"
#include "workers.h"

namespace eoc::routing::testing {

using TimePoint = std::chrono::steady_clock::time_point;
inline const TimePoint kT0 = TimePoint{} + std::chrono::hours(1);

// A scraped load: `running` sequences, and `free_blocks` of 16 tokens free.
inline Load LoadOf(double running, std::int64_t free_blocks = 100'000) {
  return Load{.running = running,
              .kv_blocks_total = 100'000,
              .kv_blocks_free = free_blocks,
              .block_size = 16,
              .available = true};
}

// A prompt of `blocks` prefix blocks of 16 tokens (64 bytes each), all `c`.
inline std::string PromptOf(char c, std::size_t blocks) {
  std::string prompt(blocks * 64, c);  // not `return {n, c}`: that is a two-character string
  return prompt;
}

// The pod a pick chose, or its status when it chose none.
inline std::string Where(const PickOutcome& outcome) {
  if (!outcome.picked()) return std::string(ToString(outcome.status));
  return outcome.worker().pod;
}

// A pick that waits up to 30 s when it finds no room; `answer` takes the status it is answered
// with later.
inline PickOutcome PickOrWait(PoolState& state, TimePoint now, std::optional<PickStatus>& answer) {
  return state.Pick({}, 1, now,
                    {.deadline = now + std::chrono::seconds(30), .make_done = [&answer] {
                       return [&answer](const PickOutcome& o) { answer = o.status; };
                     }});
}

class PoolStateTest : public ::testing::Test {
 protected:
  // Requests of 160 tokens (10 blocks of 16) unless they say otherwise.
  static PoolState::Options DefaultOptions() {
    PoolState::Options options;
    options.default_prompt_tokens = 100;
    options.default_expected_tokens = 60;
    options.sessions.shards = 1;
    options.prefix.shards = 1;
    return options;
  }

  void Start(std::vector<Worker> workers, Strategy strategy = Strategy::kJouleWeighted,
             const PoolState::Options& options = DefaultOptions()) {
    state_ = std::make_unique<PoolState>(options, budget_, prefix_budget_);
    Publish(std::move(workers), strategy);
  }
  void Publish(std::vector<Worker> workers, Strategy strategy = Strategy::kJouleWeighted) {
    state_->SetSnapshot(PoolSnapshot::Build(std::move(workers), ++generation_, strategy), now_);
  }
  void Observe(int worker, const Load& load) {
    ASSERT_TRUE(state_->ObserveLoad(KeyOf(worker), load, now_));
  }

  PickOutcome Pick(const PickRequest& request) { return state_->TryPick(request, rng_(), now_); }
  PickOutcome PickSession(const std::string& session) {
    return Pick({.session = SessionHashOf(session)});
  }

  SessionBudget budget_;
  PrefixBudget prefix_budget_;
  std::unique_ptr<PoolState> state_;
  std::int64_t generation_ = 0;
  TimePoint now_ = kT0;
  std::mt19937_64 rng_{42};
};

}  // namespace eoc::routing::testing
