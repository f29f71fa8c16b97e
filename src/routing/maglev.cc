#include "routing/maglev.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace eoc::routing {
namespace {

constexpr std::uint64_t kOffsetSeed = 0x6D61676C65762D6FULL;  // "maglev-o"
constexpr std::uint64_t kSkipSeed = 0x6D61676C65762D73ULL;    // "maglev-s"
constexpr std::uint64_t kStepSeed = 0x6D61676C65762D77ULL;    // "maglev-w"
constexpr std::uint16_t kFree = 0xFFFF;

// One entry of positive weight while the table fills.
struct Turns {
  std::uint64_t slot;  // the next slot of its permutation to try
  std::uint64_t skip;
  std::uint64_t taken = 0;  // turns taken so far
  std::uint64_t weight;
  std::uint32_t rank;  // position in key order: breaks ties
  std::uint16_t index;
};

// Whether `a`'s next turn comes before `b`'s: (2 ka + 1) / 2 wa < (2 kb + 1) / 2 wb, exactly.
bool Sooner(const Turns& a, const Turns& b) {
  const std::uint64_t lhs = (2 * a.taken + 1) * b.weight;
  const std::uint64_t rhs = (2 * b.taken + 1) * a.weight;
  return lhs != rhs ? lhs < rhs : a.rank < b.rank;
}

}  // namespace

std::uint32_t MaglevTable::TableSizeFor(std::size_t entries) {
  return entries * 100 < kSmallTableSize ? kSmallTableSize : kLargeTableSize;
}

MaglevTable::MaglevTable(std::span<const Entry> entries)
    : MaglevTable(
          entries,
          TableSizeFor(static_cast<std::size_t>(std::count_if(
              entries.begin(), entries.end(), [](const Entry& e) { return e.weight > 0; })))) {}

MaglevTable::MaglevTable(std::span<const Entry> entries, std::uint32_t table_size) {
  if (entries.size() > kMaxEntries) throw std::length_error("MaglevTable: too many entries");
  if (table_size < 2) throw std::invalid_argument("MaglevTable: table size below 2");
  std::vector<std::uint16_t> order;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].weight > 0) order.push_back(static_cast<std::uint16_t>(i));
  }
  if (order.empty()) return;
  std::sort(order.begin(), order.end(), [&](std::uint16_t a, std::uint16_t b) {
    return std::tie(entries[a].key, a) < std::tie(entries[b].key, b);
  });

  const std::uint64_t m = table_size;
  std::vector<Turns> turns;
  turns.reserve(order.size());
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    const Entry& e = entries[order[rank]];
    turns.push_back(Turns{.slot = Mix64(e.key ^ kOffsetSeed) % m,
                          .skip = Mix64(e.key ^ kSkipSeed) % (m - 1) + 1,
                          .weight = static_cast<std::uint64_t>(e.weight),
                          .rank = static_cast<std::uint32_t>(rank),
                          .index = order[rank]});
  }
  // A heap of entries by their next turn (std heaps keep the largest first: invert Sooner).
  std::vector<std::uint32_t> heap(turns.size());
  for (std::uint32_t i = 0; i < heap.size(); ++i) heap[i] = i;
  const auto later = [&](std::uint32_t a, std::uint32_t b) { return Sooner(turns[b], turns[a]); };
  std::make_heap(heap.begin(), heap.end(), later);

  slots_.assign(table_size, kFree);
  for (std::uint64_t filled = 0; filled < m; ++filled) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Turns& t = turns[heap.back()];
    // slot + skip < 2m: a subtraction instead of a division.
    const auto advance = [m](std::uint64_t slot, std::uint64_t skip) {
      return slot + skip >= m ? slot + skip - m : slot + skip;
    };
    while (slots_[t.slot] != kFree) t.slot = advance(t.slot, t.skip);
    if (t.taken == 0) ++holders_;
    slots_[t.slot] = t.index;
    t.slot = advance(t.slot, t.skip);
    ++t.taken;
    std::push_heap(heap.begin(), heap.end(), later);
  }
}

std::uint32_t MaglevTable::Lookup(std::uint64_t hash) const {
  if (slots_.empty()) return kNone;
  return slots_[SlotOf(hash)];
}

MaglevTable::Preference MaglevTable::Prefer(std::uint64_t hash) const {
  if (slots_.empty()) return {this, 0, 0};
  const std::uint64_t m = slots_.size();
  const auto step = static_cast<std::uint32_t>(Mix64(hash ^ kStepSeed) % (m - 1) + 1);
  return {this, SlotOf(hash), step};
}

std::uint32_t MaglevTable::Preference::Next() {
  const auto m = static_cast<std::uint32_t>(table_->slots_.size());
  const std::uint32_t wanted = std::min<std::uint32_t>(kMaxPreference, table_->holders_);
  const std::uint32_t walk = std::min(kMaxWalk, m);
  while (count_ < wanted && walked_ < walk) {
    const std::uint16_t e = table_->slots_[slot_];
    slot_ = slot_ + step_ >= m ? slot_ + step_ - m : slot_ + step_;
    ++walked_;
    const std::span<const std::uint16_t> seen(seen_.data(), count_);
    if (std::find(seen.begin(), seen.end(), e) == seen.end()) {
      seen_[count_++] = e;
      return e;
    }
  }
  return kNone;
}

std::vector<std::uint32_t> MaglevTable::SlotCounts(std::size_t entries) const {
  std::vector<std::uint32_t> counts(entries, 0);
  for (const std::uint16_t e : slots_) {
    if (e < entries) ++counts[e];
  }
  return counts;
}

}  // namespace eoc::routing
