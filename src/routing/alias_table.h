// Vose's alias method over integer weights: built once (O(n)), then each draw picks index i with
// probability weight[i] / sum(weights) in O(1), from one uniform 64-bit number the caller passes.
// The table is immutable, so any number of threads may draw from one table at once, each with its
// own random source (there is no global RNG). Exact: the integer weights are not rounded to
// floating point, and an index whose weight is 0 (or negative) is never drawn.
//
//   AliasTable table(std::vector<std::int32_t>{1000, 250, 0, 750});
//   thread_local std::mt19937_64 rng(seed);
//   std::size_t i = table.Draw(rng());   // 0 with p = 1000/2000, 1 with 250/2000, never 2
//   if (table.empty()) { ... }            // no positive weight: Draw returns AliasTable::kNone
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace eoc::routing {

class AliasTable {
 public:
  // What Draw returns from an empty table.
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  // An empty table.
  AliasTable() = default;
  // Throws std::length_error when size x sum of weights reaches 2^62 (far past any pool: 2,000
  // workers of weight 1,000 make 2^32).
  explicit AliasTable(std::span<const std::int32_t> weights);

  // Index drawn with probability weight / total_weight, from `random` uniform over 64 bits; kNone
  // when the table is empty. Thread-safe; no allocation.
  std::size_t Draw(std::uint64_t random) const;

  // No index can be drawn: no weights, or none positive.
  bool empty() const { return total_ == 0; }
  // The number of weights the table was built from (drawable or not).
  std::size_t size() const { return alias_.size(); }
  // The sum of the positive weights.
  std::uint64_t total_weight() const { return total_; }

 private:
  // Column i keeps itself when a uniform u in [0, total_) is below keep_[i], else gives alias_[i].
  // keep_[i] is weight[i] x size after Vose's redistribution, in units of total_.
  std::vector<std::uint64_t> keep_;
  std::vector<std::uint32_t> alias_;
  std::uint64_t total_ = 0;
};

}  // namespace eoc::routing
