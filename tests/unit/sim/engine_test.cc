#include "sim/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

namespace eoc::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A flat profile: every step of up to 64 sequences takes 20 ms at 300 W; idle 60 W.
PowerProfile Flat() {
  return PowerProfile({{.batch = 8, .watts = 300, .tokens_per_second = 400},
                       {.batch = 64, .watts = 300, .tokens_per_second = 3200}},
                      60);
}

EngineParams Params() {
  return {.max_num_seqs = 4,
          .max_batched_tokens = 4096,
          .kv_capacity_tokens = 65536,
          .kv_block_tokens = 16,
          .prefix_block_tokens = 16,
          .prefill_tokens_per_second = 10000};
}

// Chained-looking block ids: `n` blocks starting at `first`.
std::vector<std::uint64_t> Blocks(std::uint64_t first, int n) {
  std::vector<std::uint64_t> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(first + static_cast<std::uint64_t>(i));
  return out;
}

// Runs the engine until it is idle; each request's first-token and finish step (1-based).
struct Replay {
  std::map<std::uint64_t, int> first_token;
  std::map<std::uint64_t, int> finished;
  std::vector<StepResult> steps;
  int preempted = 0;
};
Replay RunDry(Engine& engine, int max_steps = 100000) {
  Replay run;
  for (int n = 1; engine.HasWork() && n <= max_steps; ++n) {
    StepResult r = engine.Step();
    EXPECT_GT(r.batch, 0) << "a step with work did nothing at step " << n;
    if (r.batch == 0) break;
    for (std::uint64_t id : r.first_token) run.first_token[id] = n;
    for (std::uint64_t id : r.finished) run.finished[id] = n;
    run.preempted += r.preempted;
    run.steps.push_back(std::move(r));
  }
  EXPECT_FALSE(engine.HasWork());
  return run;
}

TEST(Engine, ALoneRequestPrefillsThenDecodesOneTokenAStep) {
  const PowerProfile profile = Flat();
  Engine engine(Params(), profile);
  engine.Admit({.id = 1, .prompt_tokens = 1000, .output_tokens = 3});
  const Replay run = RunDry(engine);
  ASSERT_EQ(run.steps.size(), 3U);
  EXPECT_EQ(run.first_token.at(1), 1);
  EXPECT_EQ(run.finished.at(1), 3);
  // The prompt's step: a one-sequence decode step (20 ms) plus 1,000 tokens at 10,000 a second,
  // the latter at the profile's highest watts.
  EXPECT_DOUBLE_EQ(run.steps[0].seconds, profile.StepSeconds(1) + 0.1);
  EXPECT_DOUBLE_EQ(run.steps[0].joules, profile.StepSeconds(1) * profile.Watts(1) + 0.1 * 300);
  EXPECT_EQ(run.steps[0].prompt_tokens, 1000);
  EXPECT_DOUBLE_EQ(run.steps[1].seconds, profile.StepSeconds(1));
  const EngineFigures f = engine.Figures();
  EXPECT_EQ(f.prompt_tokens_total, 1000);
  EXPECT_EQ(f.generation_tokens_total, 3);
  EXPECT_EQ(f.running, 0);
  EXPECT_EQ(f.waiting, 0);
}

TEST(Engine, LongPromptsAreComputedInChunksOfTheStepBudget) {
  const PowerProfile profile = Flat();
  Engine engine(Params(), profile);
  engine.Admit({.id = 1, .prompt_tokens = 10000, .output_tokens = 2});
  const Replay run = RunDry(engine);
  ASSERT_EQ(run.steps.size(), 4U);
  EXPECT_EQ(run.steps[0].prompt_tokens, 4096);
  EXPECT_EQ(run.steps[1].prompt_tokens, 4096);
  EXPECT_EQ(run.steps[2].prompt_tokens, 1808);
  EXPECT_EQ(run.first_token.at(1), 3);
  EXPECT_EQ(run.finished.at(1), 4);
}

TEST(Engine, DecodesShareTheStepWithAPromptChunk) {
  const PowerProfile profile = Flat();
  Engine engine(Params(), profile);
  engine.Admit({.id = 1, .prompt_tokens = 100, .output_tokens = 5});
  ASSERT_EQ(engine.Step().first_token, std::vector<std::uint64_t>{1});
  engine.Admit({.id = 2, .prompt_tokens = 200, .output_tokens = 1});
  const StepResult both = engine.Step();
  EXPECT_EQ(both.batch, 2);
  EXPECT_EQ(both.prompt_tokens, 200);
  EXPECT_EQ(both.generated_tokens, 2);  // 1's second token and 2's first (and last)
  EXPECT_THAT(both.finished, ElementsAre(2));
}

TEST(Engine, AtMostMaxNumSeqsRunTheRestWait) {
  const PowerProfile profile = Flat();
  Engine engine(Params(), profile);  // 4 at once
  for (std::uint64_t id = 1; id <= 6; ++id) {
    engine.Admit({.id = id, .prompt_tokens = 32, .output_tokens = 10});
  }
  const StepResult first = engine.Step();
  EXPECT_EQ(first.batch, 4);
  EXPECT_EQ(engine.Figures().running, 4);
  EXPECT_EQ(engine.Figures().waiting, 2);
  const Replay run = RunDry(engine);
  EXPECT_EQ(run.finished.size(), 6U);
  EXPECT_EQ(run.first_token.at(5), run.finished.at(1) + 1);  // admitted once 1 to 4 are done
}

TEST(Engine, ACachedPrefixIsNotComputedAgain) {
  const PowerProfile profile = Flat();
  Engine engine(Params(), profile);
  engine.Admit(
      {.id = 1, .prompt_tokens = 1000, .output_tokens = 1, .prefix_blocks = Blocks(1, 62)});
  RunDry(engine);
  // 62 full blocks of 16 tokens are cached: a prompt starting with 40 of them computes the rest.
  std::vector<std::uint64_t> blocks = Blocks(1, 40);
  for (std::uint64_t b : Blocks(1000, 10)) blocks.push_back(b);
  engine.Admit({.id = 2, .prompt_tokens = 800, .output_tokens = 1, .prefix_blocks = blocks});
  const StepResult r = engine.Step();
  EXPECT_EQ(r.prompt_tokens, 800 - (40 * 16));
  const EngineFigures f = engine.Figures();
  EXPECT_EQ(f.prefix_queries_tokens_total, 1800);
  EXPECT_EQ(f.prefix_hits_tokens_total, 640);
  // A prompt that is all cached still computes its last token.
  engine.Admit({.id = 3, .prompt_tokens = 640, .output_tokens = 1, .prefix_blocks = Blocks(1, 40)});
  EXPECT_EQ(engine.Step().prompt_tokens, 16);
}

TEST(Engine, ARunningPromptsBlocksAreSharedAtOnce) {
  const PowerProfile profile = Flat();
  Engine engine(Params(), profile);
  engine.Admit(
      {.id = 1, .prompt_tokens = 320, .output_tokens = 50, .prefix_blocks = Blocks(1, 20)});
  (void)engine.Step();  // 1's prompt is computed and published; it goes on decoding
  engine.Admit({.id = 2, .prompt_tokens = 330, .output_tokens = 1, .prefix_blocks = Blocks(1, 20)});
  const StepResult r = engine.Step();  // 1's decode, 2's last 10 prompt tokens
  EXPECT_EQ(r.batch, 2);
  EXPECT_EQ(r.prompt_tokens, 10);
}

TEST(Engine, IdleCachedBlocksGoLeastRecentlyUsedFirstWhenRoomIsNeeded) {
  const PowerProfile profile = Flat();
  EngineParams p = Params();
  p.kv_capacity_tokens = 1600;  // 100 blocks
  Engine engine(p, profile);
  // Three prompts of 40 blocks each, one after the other: the third needs the first's room.
  for (std::uint64_t id = 1; id <= 3; ++id) {
    engine.Admit({.id = id,
                  .prompt_tokens = 640,
                  .output_tokens = 1,
                  .prefix_blocks = Blocks(id * 1000, 40)});
    RunDry(engine);
  }
  // The second's blocks are still cached, the first's are gone.
  engine.Admit(
      {.id = 4, .prompt_tokens = 656, .output_tokens = 1, .prefix_blocks = Blocks(2000, 40)});
  EXPECT_EQ(engine.Step().prompt_tokens, 16);
  engine.Admit(
      {.id = 5, .prompt_tokens = 656, .output_tokens = 1, .prefix_blocks = Blocks(1000, 40)});
  EXPECT_EQ(engine.Step().prompt_tokens, 656);
}

TEST(Engine, ACacheTooSmallForAllPreemptsTheNewestAndEveryoneFinishes) {
  const PowerProfile profile = Flat();
  EngineParams p = Params();
  p.kv_capacity_tokens = 1024;  // 64 blocks: two sequences of up to 40 blocks do not fit
  Engine engine(p, profile);
  engine.Admit({.id = 1, .prompt_tokens = 320, .output_tokens = 320});
  engine.Admit({.id = 2, .prompt_tokens = 320, .output_tokens = 320});
  const Replay run = RunDry(engine);
  EXPECT_GT(run.preempted, 0);
  EXPECT_EQ(engine.Figures().preemptions_total, run.preempted);
  ASSERT_EQ(run.finished.size(), 2U);
  EXPECT_LT(run.finished.at(1), run.finished.at(2));  // the older one kept its place
  EXPECT_EQ(engine.Figures().generation_tokens_total, 640);
  EXPECT_EQ(engine.Figures().prompt_tokens_total, 640);  // a recompute is not a new prompt
  for (const StepResult& r : run.steps) EXPECT_LE(r.batch, 2);
}

TEST(Engine, CacheUseCountsBlocksHeldNotIdleCachedOnes) {
  const PowerProfile profile = Flat();
  EngineParams p = Params();
  p.kv_capacity_tokens = 1600;  // 100 blocks
  Engine engine(p, profile);
  engine.Admit(
      {.id = 1, .prompt_tokens = 800, .output_tokens = 100, .prefix_blocks = Blocks(1, 50)});
  (void)engine.Step();
  EXPECT_DOUBLE_EQ(engine.Figures().kv_cache_usage, 0.5);  // 50 blocks of 100
  RunDry(engine);
  EXPECT_DOUBLE_EQ(engine.Figures().kv_cache_usage, 0);  // cached but idle: free to take
  EXPECT_EQ(engine.Figures().kv_blocks_total, 100);
}

TEST(Engine, ARequestLargerThanTheCacheIsRefusedNotQueued) {
  const PowerProfile profile = Flat();
  EngineParams p = Params();
  p.kv_capacity_tokens = 160;  // 10 blocks
  Engine engine(p, profile);
  engine.Admit({.id = 1, .prompt_tokens = 150, .output_tokens = 20});
  engine.Admit({.id = 2, .prompt_tokens = 100, .output_tokens = 20});
  EXPECT_THAT(engine.TakeRefused(), ElementsAre(1));
  EXPECT_THAT(engine.TakeRefused(), IsEmpty());
  const Replay run = RunDry(engine);
  EXPECT_EQ(run.finished.size(), 1U);
}

TEST(Engine, BadParametersAndRequestsAreNamed) {
  const PowerProfile profile = Flat();
  EngineParams p = Params();
  p.prefix_block_tokens = 24;
  try {
    Engine engine(p, profile);
    FAIL() << "accepted a prefix block of 24 tokens over KV blocks of 16";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("prefix_block_tokens (24) must be a positive multiple of "
                                    "kv_block_tokens (16)"));
  }
  p = Params();
  p.prefill_tokens_per_second = 0;
  EXPECT_THROW(Engine rejected(p, profile), std::invalid_argument);
  Engine engine(Params(), profile);
  EXPECT_THROW(engine.Admit({.id = 9, .prompt_tokens = 0, .output_tokens = 1}),
               std::invalid_argument);
  EXPECT_FALSE(engine.HasWork());
  EXPECT_EQ(engine.Step().batch, 0);
}

}  // namespace
}  // namespace eoc::sim
