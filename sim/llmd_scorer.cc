#include "sim/llmd_scorer.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "common/mix64.h"

namespace eoc::sim {
namespace {

// How often the indexer drops the servers that left (the extension's PodActiveCheckInterval).
constexpr double kPodActiveCheckSeconds = 120;
// SplitMix64's increment (the golden ratio in 64 bits): Mix64 of a counter stepped by it.
constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

class LlmdScorer final : public BaselineRouter {
 public:
  explicit LlmdScorer(const BaselineSpec& spec)
      : p_(spec.scorer), block_tokens_(std::max<std::int64_t>(1, spec.block_tokens)) {}

  std::size_t Choose(const TraceRequest& request, std::span<const RouterWorker> workers,
                     std::uint64_t random) override {
    const double now = request.arrival_seconds;
    if (now - last_cleanup_ >= kPodActiveCheckSeconds) {
      std::erase_if(indexer_, [&](const auto& entry) {
        return std::none_of(workers.begin(), workers.end(),
                            [&](const RouterWorker& w) { return w.id == entry.first; });
      });
      last_cleanup_ = now;
    }
    const auto blocks = Hashed(request);
    const auto [low, high] = std::minmax_element(
        workers.begin(), workers.end(),
        [](const RouterWorker& a, const RouterWorker& b) { return a.waiting < b.waiting; });

    std::size_t chosen = 0;
    double best = -1;
    std::uint64_t ties = 0;
    std::uint64_t stream = random;  // splitmix64: the picker's tie draws
    for (std::size_t i = 0; i < workers.size(); ++i) {
      const RouterWorker& w = workers[i];
      const double queue = high->waiting == low->waiting
                               ? 1.0
                               : static_cast<double>(high->waiting - w.waiting) /
                                     static_cast<double>(high->waiting - low->waiting);
      const double kv = 1.0 - std::clamp(w.kv_cache_usage, 0.0, 1.0);
      const double prefix = blocks.empty() ? 0.0
                                           : static_cast<double>(Matched(w.id, blocks)) /
                                                 static_cast<double>(blocks.size());
      const double score = p_.queue_weight * queue + p_.kv_cache_utilization_weight * kv +
                           p_.prefix_cache_weight * prefix;
      if (score > best) {
        chosen = i;
        best = score;
        ties = 1;
      } else if (score == best && Mix64(stream += kGolden) % ++ties == 0) {  // each equally likely
        chosen = i;
      }
    }
    const RouterWorker& target = workers[chosen];
    const std::int64_t capacity_tokens = p_.lru_capacity_tokens > 0      ? p_.lru_capacity_tokens
                                         : target.kv_capacity_tokens > 0 ? target.kv_capacity_tokens
                                                                         : kDefaultCapacityTokens;
    const auto capacity =
        static_cast<std::size_t>(std::max<std::int64_t>(1, capacity_tokens / block_tokens_));
    BlockLru& lru = indexer_.try_emplace(target.id, capacity).first->second;
    lru.SetCapacity(capacity);
    for (const std::uint64_t block : blocks) lru.Put(block, true);
    return chosen;
  }

 private:
  // The extension's LRUCapacityPerServer (31,250) of vLLM's 16-token blocks.
  static constexpr std::int64_t kDefaultCapacityTokens = std::int64_t{31'250} * 16;

  // The blocks the scorer hashes: the prompt's, up to max_prefix_tokens.
  std::span<const std::uint64_t> Hashed(const TraceRequest& request) const {
    const auto most =
        static_cast<std::size_t>(std::max<std::int64_t>(0, p_.max_prefix_tokens / block_tokens_));
    return std::span<const std::uint64_t>(request.prefix_blocks)
        .first(std::min(most, request.prefix_blocks.size()));
  }

  // The leading blocks the indexer says were sent to server `id`.
  std::size_t Matched(std::uint64_t id, std::span<const std::uint64_t> blocks) const {
    const auto it = indexer_.find(id);
    return it == indexer_.end() ? 0 : LeadingBlocksHeld(it->second, blocks);
  }

  ScorerParams p_;
  std::int64_t block_tokens_;
  double last_cleanup_ = 0;
  std::unordered_map<std::uint64_t, BlockLru> indexer_;  // by RouterWorker::id: one per server
};

}  // namespace

std::unique_ptr<BaselineRouter> MakeLlmdScorer(const BaselineSpec& spec) {
  return std::make_unique<LlmdScorer>(spec);
}

}  // namespace eoc::sim
