// One simulated inference engine (a vLLM-style server on one accelerator instance): continuous
// batching in steps, chunked prefill under a token budget, a paged KV cache with a prefix cache of
// block hashes (least recently used blocks evicted first) and preemption when the cache runs out.
// Pure: time comes in as arguments; the simulator schedules the steps.
//
//   Engine engine(params, profile);                 // profile: watts and step time by batch
//   engine.Admit({.id = 7, .prompt_tokens = 900, .output_tokens = 40, .prefix_blocks = hashes});
//   while (engine.HasWork()) {
//     StepResult step = engine.Step();               // plans and applies one step
//     now += step.seconds;                           // its first tokens and finishes are at `now`
//   }
//   engine.Figures();                                // what its /metrics page would say
//
// A step (vLLM's scheduler, simplified): every running sequence that has finished its prompt
// decodes one token; the rest of the step's token budget (max_batched_tokens) goes to prompt
// chunks, first of running sequences still in their prompt, then of waiting requests admitted in
// arrival order while fewer than max_num_seqs run and the cache has blocks for their first chunk.
// A request's prompt starts after the longest run of its prefix blocks already cached (those
// tokens are hits and are not computed again; at least one prompt token is always computed). A
// sequence whose prompt completes in a step emits its first token at the step's end.
//
// Time and energy of a step: the profile's decode step time for the step's batch (sequences in
// it), drawing the profile's watts at that batch, plus prompt tokens over prefill_tokens_per_second
// at the profile's highest measured watts (a prompt chunk keeps the accelerator as busy as a full
// batch does). Between steps the instance draws idle watts; the simulator counts that time.
//
// KV cache: kv_capacity_tokens in blocks of kv_block_tokens. A sequence holds blocks for the tokens
// it has computed and generated; when its prompt completes, its full prefix blocks (of
// prefix_block_tokens each, the trace's block size) join the prefix cache, shared with any other
// sequence that starts with them. Cached blocks no sequence holds stay until their room is needed,
// then go least recently used first. When a decoding sequence needs a block and none can be freed,
// the most recently admitted running sequence is preempted (vLLM's recompute): its blocks are
// freed, and it goes back to the front of the queue to compute its prompt and the tokens it had
// generated again.
//
// Bounded: the queue holds what the simulator admits (the router decides how much), the running
// set at most max_num_seqs, the prefix cache at most the cache's blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/power_profile.h"

namespace eoc::sim {

struct EngineParams {
  std::int32_t max_num_seqs = 256;         // vLLM's default --max-num-seqs
  std::int32_t max_batched_tokens = 8192;  // tokens a step computes (decode + prompt chunks)
  std::int64_t kv_capacity_tokens = 0;     // > 0
  std::int32_t kv_block_tokens = 16;       // vLLM's default --block-size
  std::int32_t prefix_block_tokens = 16;   // the trace's prefix block size
  double prefill_tokens_per_second = 0;    // > 0: uncached prompt tokens
};

// A request as the engine sees it.
struct EngineRequest {
  std::uint64_t id = 0;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 1;            // at least 1
  std::vector<std::uint64_t> prefix_blocks;  // chained hashes of its full prompt blocks
};

// What one step did: it takes `seconds` from its start, and its effects count at its end.
struct StepResult {
  double seconds = 0;
  double joules = 0;
  std::int32_t batch = 0;                  // sequences in the step
  std::int64_t prompt_tokens = 0;          // prompt tokens computed (cache misses)
  std::int64_t generated_tokens = 0;       // output tokens generated
  std::vector<std::uint64_t> first_token;  // requests whose first output token ends this step
  std::vector<std::uint64_t> finished;     // requests whose last output token ends this step
  std::int32_t preempted = 0;
};

// The engine's figures, as its /metrics page shows them (counters since it started).
struct EngineFigures {
  std::int32_t running = 0;
  std::int32_t waiting = 0;
  double kv_cache_usage = 0;  // 0..1: blocks in use (cached blocks no sequence holds excluded)
  std::int64_t kv_blocks_total = 0;
  std::int32_t kv_block_tokens = 0;
  std::int64_t prompt_tokens_total = 0;  // prompt tokens of admitted requests (hits included)
  std::int64_t generation_tokens_total = 0;
  std::int64_t prefix_queries_tokens_total = 0;  // prompt tokens looked up in the prefix cache
  std::int64_t prefix_hits_tokens_total = 0;     // of those, found cached
  std::int64_t preemptions_total = 0;
};

class Engine {
 public:
  // `profile` must outlive the engine. Throws std::invalid_argument naming a bad parameter.
  Engine(const EngineParams& params, const PowerProfile& profile);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  Engine(Engine&& other) noexcept;
  Engine& operator=(Engine&& other) noexcept;

  // Queues a request (prompt_tokens >= 1 and output_tokens >= 1, else std::invalid_argument). A
  // request that could never fit the cache alone is still queued: it is refused at admission
  // (RefusedTooLarge) rather than blocking the queue forever.
  void Admit(EngineRequest request);
  bool HasWork() const;
  // Plans and applies one step; nothing (seconds 0) when there is no work.
  StepResult Step();
  EngineFigures Figures() const;
  // Requests refused because their prompt alone needs more blocks than the cache has; the
  // simulator counts them as shed. Taken (cleared) by the call.
  std::vector<std::uint64_t> TakeRefused();

  const PowerProfile& profile() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace eoc::sim
