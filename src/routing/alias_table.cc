#include "routing/alias_table.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace eoc::routing {
namespace {

__extension__ using Uint128 = unsigned __int128;

constexpr std::uint64_t kMaxScaledTotal = std::uint64_t{1} << 62;

}  // namespace

AliasTable::AliasTable(std::span<const std::int32_t> weights) {
  const std::size_t n = weights.size();
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("AliasTable: too many weights");
  }
  for (const std::int32_t w : weights) total_ += static_cast<std::uint64_t>(std::max(w, 0));
  if (total_ > 0 && total_ >= kMaxScaledTotal / n) {
    throw std::length_error("AliasTable: weights too large");
  }
  keep_.resize(n);
  alias_.resize(n);
  if (total_ == 0) return;  // empty: Draw returns kNone

  // Vose: every column holds total_ units; column i starts with weight[i] x n of its own. Columns
  // short of total_ (small) are topped up by an alias taken from one with a surplus (large).
  std::vector<std::uint32_t> small;
  std::vector<std::uint32_t> large;
  for (std::size_t i = 0; i < n; ++i) {
    keep_[i] = static_cast<std::uint64_t>(std::max(weights[i], 0)) * n;
    alias_[i] = static_cast<std::uint32_t>(i);
    (keep_[i] < total_ ? small : large).push_back(static_cast<std::uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const std::uint32_t s = small.back();
    small.pop_back();
    const std::uint32_t l = large.back();
    large.pop_back();
    alias_[s] = l;
    keep_[l] -= total_ - keep_[s];
    (keep_[l] < total_ ? small : large).push_back(l);
  }
  // Integer arithmetic is exact, so what is left holds exactly total_ units: it keeps itself.
  for (const std::uint32_t i : large) keep_[i] = total_;
  for (const std::uint32_t i : small) keep_[i] = total_;
}

std::size_t AliasTable::Draw(std::uint64_t random) const {
  if (total_ == 0) return kNone;
  // The high half of random x n is a uniform column; the low half, still uniform and independent
  // of it, scaled to [0, total_), decides between the column and its alias.
  const Uint128 product = static_cast<Uint128>(random) * alias_.size();
  const auto column = static_cast<std::size_t>(product >> 64);
  const auto fraction = static_cast<std::uint64_t>(product);
  const auto u = static_cast<std::uint64_t>((static_cast<Uint128>(fraction) * total_) >> 64);
  return u < keep_[column] ? column : alias_[column];
}

}  // namespace eoc::routing
