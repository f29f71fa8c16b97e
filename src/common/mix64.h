// SplitMix64's finalizer: a fixed bijective mix of 64 bits, stable across builds and replicas.
// It spreads a key's entropy over every bit, so that the top bits (a shard) and the low bits (a
// slot) are independent even for keys that are small integers rather than real hashes; the
// routing engine's consistent-hash table and the LRU map (common/lru_map.h) use it as their hash.
//
//   std::uint64_t slot = eoc::Mix64(key) & mask;
#pragma once

#include <cstdint>

namespace eoc {

constexpr std::uint64_t Mix64(std::uint64_t x) {
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

}  // namespace eoc
