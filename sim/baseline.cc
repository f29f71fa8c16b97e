#include "sim/baseline.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <unordered_map>
#include <vector>

#include "sim/llmd_scorer.h"

namespace eoc::sim {
namespace {

// A uniform index below `n` from 32 random bits (multiply and shift: no modulo bias to speak of).
std::size_t Below(std::uint32_t bits, std::size_t n) {
  return static_cast<std::size_t>((static_cast<std::uint64_t>(bits) * n) >> 32);
}

class Random final : public BaselineRouter {
 public:
  std::size_t Choose(const TraceRequest& /*request*/, std::span<const RouterWorker> workers,
                     std::uint64_t random) override {
    return Below(static_cast<std::uint32_t>(random >> 32), workers.size());
  }
};

class RoundRobin final : public BaselineRouter {
 public:
  std::size_t Choose(const TraceRequest& /*request*/, std::span<const RouterWorker> workers,
                     std::uint64_t /*random*/) override {
    return next_++ % workers.size();
  }

 private:
  std::size_t next_ = 0;
};

class LeastOutstanding final : public BaselineRouter {
 public:
  std::size_t Choose(const TraceRequest& /*request*/, std::span<const RouterWorker> workers,
                     std::uint64_t /*random*/) override {
    std::size_t best = 0;
    for (std::size_t i = 1; i < workers.size(); ++i) {
      if (workers[i].outstanding < workers[best].outstanding) best = i;
    }
    return best;
  }
};

class PowerOfTwo final : public BaselineRouter {
 public:
  std::size_t Choose(const TraceRequest& /*request*/, std::span<const RouterWorker> workers,
                     std::uint64_t random) override {
    const std::size_t n = workers.size();
    if (n == 1) return 0;
    const std::size_t first = Below(static_cast<std::uint32_t>(random >> 32), n);
    std::size_t second = Below(static_cast<std::uint32_t>(random), n - 1);
    if (second >= first) ++second;  // two distinct workers
    return workers[second].outstanding < workers[first].outstanding ? second : first;
  }
};

class CacheAware final : public BaselineRouter {
 public:
  explicit CacheAware(const BaselineSpec& spec)
      : p_(spec.cache_aware), block_tokens_(std::max(1, spec.block_tokens)) {}

  std::size_t Choose(const TraceRequest& request, std::span<const RouterWorker> workers,
                     std::uint64_t /*random*/) override {
    const double now = request.arrival_seconds;
    if (now - last_eviction_ >= p_.eviction_interval_seconds) {
      // A worker no longer among `workers` has left the router: its tree goes with it.
      std::erase_if(trees_, [&](const auto& entry) {
        return std::none_of(workers.begin(), workers.end(),
                            [&](const RouterWorker& w) { return w.id == entry.first; });
      });
      // Each tree cut to max_tree_size, least recently used first.
      const auto max = static_cast<std::size_t>(std::max<std::int64_t>(0, p_.max_tree_size));
      for (auto& [id, tree] : trees_) {
        tree.SetCapacity(max);
        tree.SetCapacity(kUnbounded);  // between evictions a tree grows as it will
      }
      last_eviction_ = now;
    }
    const auto [low, high] = std::minmax_element(
        workers.begin(), workers.end(),
        [](const RouterWorker& a, const RouterWorker& b) { return a.outstanding < b.outstanding; });
    std::size_t chosen = 0;
    if (high->outstanding - low->outstanding > p_.balance_abs_threshold &&
        static_cast<double>(high->outstanding) >
            p_.balance_rel_threshold * static_cast<double>(low->outstanding)) {
      chosen = static_cast<std::size_t>(low - workers.begin());  // imbalanced: shortest queue
    } else {
      std::size_t best = 0;
      std::size_t best_match = 0;
      std::size_t smallest = 0;
      for (std::size_t i = 0; i < workers.size(); ++i) {
        const BlockLru& tree = TreeOf(workers[i].id);
        const std::size_t match = LeadingBlocksHeld(tree, request.prefix_blocks);
        if (match > best_match) {
          best = i;
          best_match = match;
        }
        if (tree.Size() < TreeOf(workers[smallest].id).Size()) smallest = i;
      }
      const double rate = static_cast<double>(best_match) * block_tokens_ /
                          std::max(1.0, static_cast<double>(request.prompt_tokens));
      chosen = best_match > 0 && rate > p_.cache_threshold ? best : smallest;
    }
    // The prompt's blocks are now the tree's most recently used, its first block the newest: as
    // in a radix tree, whose leaves (a prompt's tail) go before the nodes above them.
    BlockLru& tree = TreeOf(workers[chosen].id);
    const std::vector<std::uint64_t>& blocks = request.prefix_blocks;
    for (std::size_t k = blocks.size(); k-- > 0;) tree.Put(blocks[k], true);
    return chosen;
  }

 private:
  static constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

  BlockLru& TreeOf(std::uint64_t id) { return trees_.try_emplace(id, kUnbounded).first->second; }

  CacheAwareParams p_;
  double block_tokens_;
  double last_eviction_ = 0;
  std::unordered_map<std::uint64_t, BlockLru> trees_;  // by RouterWorker::id
};

}  // namespace

std::size_t LeadingBlocksHeld(const BlockLru& held, std::span<const std::uint64_t> blocks) {
  std::size_t n = 0;
  while (n < blocks.size() && held.Find(blocks[n]) != nullptr) ++n;
  return n;
}

std::unique_ptr<BaselineRouter> MakeBaseline(const BaselineSpec& spec) {
  switch (spec.kind) {
    case BaselineKind::kRandom:
      return std::make_unique<Random>();
    case BaselineKind::kRoundRobin:
      return std::make_unique<RoundRobin>();
    case BaselineKind::kLeastOutstanding:
      return std::make_unique<LeastOutstanding>();
    case BaselineKind::kPowerOfTwo:
      return std::make_unique<PowerOfTwo>();
    case BaselineKind::kSglangCacheAware:
      return std::make_unique<CacheAware>(spec);
    case BaselineKind::kLlmdScorer:
      return MakeLlmdScorer(spec);
  }
  return std::make_unique<RoundRobin>();
}

}  // namespace eoc::sim
