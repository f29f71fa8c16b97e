// llm-d's inference scheduler as a baseline (sim/baseline.h's llm-d-scorer): the default
// scheduling profile of the Gateway API Inference Extension's endpoint picker, which llm-d's
// "inference-scheduling" guide deploys. Written from the extension's documentation and chart
// (gateway-api-inference-extension: config/charts/inferencepool epp-config.yaml, the profile
// "default"; the scorers' documented behaviour), with their defaults:
//   queue-scorer (weight 2)                 each candidate's waiting queue, min-max normalised over
//                                           the candidates: (max - q) / (max - min), 1 for all when
//                                           every queue is the same.
//   kv-cache-utilization-scorer (weight 2)  1 - the KV cache's use (0..1).
//   prefix-cache-scorer (weight 3)          the approximate prefix cache: the prompt in blocks (at
//                                           most 256 blocks of 64 characters, 16 tokens with
//                                           autoTune, so 4,096 tokens), scored by the share of
//                                           them, from the first, that the indexer says were sent
//                                           to the candidate. The indexer keeps per server an LRU
//                                           of block hashes as large as the server's KV cache
//                                           (autoTune; else 31,250 blocks); the chosen server's
//                                           LRU takes the prompt's blocks after each pick, and the
//                                           servers that left are dropped every 2 minutes.
//   max-score-picker                        the highest weighted sum; equal sums drawn at random.
// The picker reads the servers' metrics every 50 ms (--refresh-metrics-interval); the simulator
// gives it figures as old (RouterWorker's waiting, kv_cache_usage, kv_capacity_tokens). The trace's
// prefix blocks stand in for the character blocks (they are what the trace knows of the text), so
// the 4,096-token cut falls on a whole block: 8 of Mooncake's 512-token blocks. Not modelled: the
// extension's flow control and saturation detector (off in the default profile) and LoRA scoring.
//
//   std::unique_ptr<BaselineRouter> r = MakeLlmdScorer({.kind = BaselineKind::kLlmdScorer});
#pragma once

#include <memory>

#include "sim/baseline.h"

namespace eoc::sim {

std::unique_ptr<BaselineRouter> MakeLlmdScorer(const BaselineSpec& spec);

}  // namespace eoc::sim
