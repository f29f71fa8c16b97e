// The routers users would pick instead of this operator's pick endpoint, as baselines for the
// simulator: each chooses a worker for every request from what such a router knows (the requests
// it has sent and not yet seen finish; for some, the workers' scraped metrics), and never waits
// (the engine queues). Written from each router's public description, with its published defaults;
// no foreign code. The simulator runs them in place of PoolState::Pick, with everything else (the
// fleet, scrapes, the autoscaler) unchanged.
//
//   std::unique_ptr<BaselineRouter> r = MakeBaseline({.kind = BaselineKind::kPowerOfTwo});
//   std::size_t chosen = r->Choose(request, workers, random);   // an index into `workers`
//
// The kinds:
//   random              a uniformly random worker: Kubernetes Service routing through kube-proxy
//                       in iptables mode, which picks an endpoint at random per connection
//                       (kubernetes.io, "Virtual IPs and Service Proxies": iptables proxy mode).
//   round-robin         each worker in turn: Envoy's ROUND_ROBIN and nginx's default upstream
//                       balancing (envoyproxy.io, "Supported load balancers"; nginx.org,
//                       ngx_http_upstream_module).
//   least-outstanding   the worker with the fewest requests in flight from this router, ties to
//                       the first: AWS Application Load Balancer's least outstanding requests
//                       (docs.aws.amazon.com, "Routing algorithms" of target groups).
//   power-of-two        two distinct workers drawn at random, the one with fewer requests in flight
//                       (ties to the first drawn): Envoy's LEAST_REQUEST with its default
//                       choice_count of 2 (envoy v1.35.0, least_request_lb.h: "P2C (power of two
//                       choices)", after Mitzenmacher's thesis).
//   sglang-cache-aware  the SGLang router's cache-aware policy, as its documentation describes it
//                       (sgl-project/sglang docs/router/router.md, "Cache-Aware Load-Balancing
//                       Router"), with the defaults of SGLang 0.5.8's router (sgl-model-gateway:
//                       cache_threshold 0.3, balance_abs_threshold 64, balance_rel_threshold 1.5,
//                       eviction_interval_secs 60, max_tree_size 67,108,864). The load is each
//                       worker's requests in flight from the router. When (max - min) load >
//                       balance_abs_threshold and max > balance_rel_threshold x min, the least
//                       loaded worker takes the request (shortest queue). Otherwise an approximate
//                       tree per worker of the prompts sent to it is matched: the worker with the
//                       longest match takes the request if the match covers more than
//                       cache_threshold of the prompt, else the worker with the smallest tree;
//                       the chosen worker's tree then holds the prompt. Every eviction_interval
//                       the trees are cut to max_tree_size, least recently used first (and the
//                       trees of workers that left are dropped, as SGLang's /remove_worker does).
//                       SGLang's trees hold characters; these hold the trace's prefix blocks (a
//                       block per node), which is what the trace knows of a prompt's text.
//   llm-d-scorer        llm-d's inference scheduler (the Gateway API Inference Extension's endpoint
//                       picker) with its default scheduling profile: the queue-scorer, the
//                       kv-cache-utilization-scorer and the approximate prefix-cache-scorer,
//                       weighted 2, 2 and 3 (kubernetes-sigs/gateway-api-inference-extension,
//                       config/charts/inferencepool epp-config.yaml, the chart llm-d's
//                       "inference-scheduling" guide installs with llm-d-inference-scheduler
//                       v0.5.0), and the max-score-picker: highest weighted sum wins, ties drawn
//                       at random. See sim/llmd_scorer.h for each scorer and its defaults.
// Pure: randomness comes in as arguments.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "common/enum_name.h"
#include "common/lru_map.h"
#include "sim/trace.h"

namespace eoc::sim {

enum class BaselineKind : std::uint8_t {
  kRandom,
  kRoundRobin,
  kLeastOutstanding,
  kPowerOfTwo,
  kSglangCacheAware,
  kLlmdScorer
};
inline constexpr std::array<EnumName<BaselineKind>, 6> kBaselineKindNames{{
    {BaselineKind::kRandom, "random"},
    {BaselineKind::kRoundRobin, "round-robin"},
    {BaselineKind::kLeastOutstanding, "least-outstanding"},
    {BaselineKind::kPowerOfTwo, "power-of-two"},
    {BaselineKind::kSglangCacheAware, "sglang-cache-aware"},
    {BaselineKind::kLlmdScorer, "llm-d-scorer"},
}};
inline std::string_view ToString(BaselineKind kind) {
  return EnumToString(kind, kBaselineKindNames);
}

// The SGLang router's cache-aware parameters (its 0.5.8 defaults; see above).
struct CacheAwareParams {
  double cache_threshold = 0.3;
  std::int64_t balance_abs_threshold = 64;
  double balance_rel_threshold = 1.5;
  double eviction_interval_seconds = 60;
  std::int64_t max_tree_size = 67'108'864;  // nodes: here, prefix blocks per worker
};

// llm-d's scheduling profile (its defaults; see sim/llmd_scorer.h).
struct ScorerParams {
  double queue_weight = 2;
  double kv_cache_utilization_weight = 2;
  double prefix_cache_weight = 3;
  // The prefix-cache-scorer hashes at most 256 blocks of 64 characters (its defaults;
  // autoTune makes a block the engine's 16 tokens at 4 characters a token): 4,096 tokens.
  std::int64_t max_prefix_tokens = 4096;
  // Its indexer's capacity per server, in tokens: 0 follows autoTune (the server's own KV-cache
  // capacity), else its LRUCapacityPerServer of 31,250 blocks x 16 tokens = 500,000.
  std::int64_t lru_capacity_tokens = 0;
  // The endpoint picker reads every server's metrics at this interval (its
  // --refresh-metrics-interval default, 50 ms); the simulator refreshes its view as often.
  double metrics_refresh_seconds = 0.05;
};

struct BaselineSpec {
  BaselineKind kind = BaselineKind::kRoundRobin;
  CacheAwareParams cache_aware;
  ScorerParams scorer;
  // The tokens of one of the trace's prefix blocks (Trace::block_size_tokens): the simulator
  // sets it.
  std::int32_t block_tokens = 16;
};

// What a baseline knows of one worker when it chooses.
struct RouterWorker {
  std::uint64_t id = 0;          // the worker, the same across calls (a router's own state is kept
                                 // by it)
  std::int64_t outstanding = 0;  // requests this router sent it that have not finished
  // What a router that reads the engines' metrics sees (the llm-d scorer; the others ignore it):
  // vllm:num_requests_waiting, vllm:kv_cache_usage_perc (0..1), and the KV cache's capacity in
  // tokens (vllm:cache_config_info's num_gpu_blocks x block_size).
  std::int64_t waiting = 0;
  double kv_cache_usage = 0;
  std::int64_t kv_capacity_tokens = 0;
};

class BaselineRouter {
 public:
  virtual ~BaselineRouter() = default;
  // The index in `workers` (not empty) for `request`; `random` is fresh uniform 64 bits.
  virtual std::size_t Choose(const TraceRequest& request, std::span<const RouterWorker> workers,
                             std::uint64_t random) = 0;
};

std::unique_ptr<BaselineRouter> MakeBaseline(const BaselineSpec& spec);

// The prompt blocks a cache-aware baseline remembers sent to one worker, most recently used first.
using BlockLru = LruMap<std::uint64_t, bool>;
// How many of `blocks`, from the first, `held` holds: the blocks are chained hashes, so each
// names its whole prefix.
std::size_t LeadingBlocksHeld(const BlockLru& held, std::span<const std::uint64_t> blocks);

}  // namespace eoc::sim
