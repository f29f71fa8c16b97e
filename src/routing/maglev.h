// A weighted Maglev consistent-hash table (Eisenbud et al., NSDI 2016): built once per routing
// generation from (worker key, weight) entries, it maps a 64-bit hash (a session's) to a
// preference order over the entries. The first choice is one table read; later choices come
// lazily, so "the first eligible worker in its preference order" costs O(choices tried).
//
//   std::vector<MaglevTable::Entry> entries = {{key_a, 1000}, {key_b, 500}, {key_c, 0}};
//   MaglevTable table(entries);                   // key_c (weight 0) gets no slots
//   std::uint32_t first = table.Lookup(session);  // an index into `entries`, or kNone
//   for (auto p = table.Prefer(session); auto i = p.Next();) {
//     if (i == MaglevTable::kNone) break;         // bounded: fall back to a scan
//     if (eligible(i)) return i;
//   }
//
// The design. Each entry has Maglev's permutation of the M slots (M prime): it starts at
// offset = Mix64(key ^ a) mod M and steps by skip = Mix64(key ^ b) mod (M - 1) + 1. Entries take
// turns claiming the next free slot of their permutation until the table is full, as in Maglev,
// but turns are weighted by stride scheduling: an entry of weight w takes its k-th turn at virtual
// time (k + 1/2) / w (ties go to the smaller key), so it claims slots in proportion to its weight,
// and a change to one entry's weight (or its removal) leaves every other entry's turn times as
// they were. Entries of weight <= 0 take no turns. The result depends only on the set of
// (key, weight) pairs and M, not on their order, so every replica builds the same table.
// A hash's preference order is the distinct entries met walking the table from slot
// Mix64(hash) mod M in steps of a second hash of it (mod M, not 0): such a walk meets slots in an
// order unrelated to how they were filled, so later choices are weight-proportional too (walking
// adjacent slots would not be: neighbours in a Maglev table are correlated). The walk stops after
// kMaxPreference distinct entries or kMaxWalk slots.
//
// Table size: kSmallTableSize (65,537) up to 655 entries of positive weight, else kLargeTableSize
// (262,139): at least 100 slots an entry up to 2,621 entries, past the routing table's 2,000-worker
// limit, and the size changes (moving most hashes) only when a pool crosses 655 workers. Building
// costs O(M log M) (Maglev's fill) plus O(M log n) for the weighted turns.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "routing/ids.h"

namespace eoc::routing {

class MaglevTable {
 public:
  struct Entry {
    WorkerKey key = 0;
    std::int32_t weight = 0;  // <= 0: no slots
  };

  static constexpr std::uint32_t kNone = 0xFFFFFFFF;
  static constexpr std::uint32_t kSmallTableSize = 65537;
  static constexpr std::uint32_t kLargeTableSize = 262139;
  // The most entries a table takes (slots hold 16-bit indices).
  static constexpr std::size_t kMaxEntries = 65535;
  // Bounds of one preference walk.
  static constexpr std::size_t kMaxPreference = 16;
  static constexpr std::uint32_t kMaxWalk = 4096;

  // The table size for `entries` entries of positive weight.
  static std::uint32_t TableSizeFor(std::size_t entries);

  // An empty table: every lookup gives kNone.
  MaglevTable() = default;
  // Slots over `entries` (returned indices are positions in it), TableSizeFor their count of
  // positive weight. Throws std::length_error past kMaxEntries.
  explicit MaglevTable(std::span<const Entry> entries);
  // The same with a given table size (a prime, at least 2; for tests).
  MaglevTable(std::span<const Entry> entries, std::uint32_t table_size);

  // The lazily walked preference order of one hash. Holds a pointer to the table.
  class Preference {
   public:
    // The next entry in preference order, each entry once; kNone when the walk is over (all
    // entries met, or a bound reached).
    std::uint32_t Next();

   private:
    friend class MaglevTable;
    Preference(const MaglevTable* table, std::uint32_t slot, std::uint32_t step)
        : table_(table), slot_(slot), step_(step) {}

    const MaglevTable* table_;
    std::uint32_t slot_;
    std::uint32_t step_;
    std::uint32_t walked_ = 0;
    std::uint32_t count_ = 0;
    std::array<std::uint16_t, kMaxPreference> seen_{};
  };

  // The first choice for `hash`: an entry index, or kNone when the table is empty. O(1).
  std::uint32_t Lookup(std::uint64_t hash) const;
  // The preference order for `hash`, starting with Lookup(hash).
  Preference Prefer(std::uint64_t hash) const;

  bool empty() const { return slots_.empty(); }
  // M: the number of slots (0 when empty).
  std::uint32_t table_size() const { return static_cast<std::uint32_t>(slots_.size()); }
  // The number of entries holding at least one slot.
  std::uint32_t holders() const { return holders_; }
  // How many slots each entry holds, by entry index (for tests and figures).
  std::vector<std::uint32_t> SlotCounts(std::size_t entries) const;

 private:
  std::uint32_t SlotOf(std::uint64_t hash) const {
    return static_cast<std::uint32_t>(Mix64(hash) % slots_.size());
  }

  std::vector<std::uint16_t> slots_;  // slot -> entry index
  std::uint32_t holders_ = 0;
};

}  // namespace eoc::routing
