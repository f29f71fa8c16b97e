// A keyed hash for in-memory tables whose keys callers choose (session ids, prompts' prefix
// hashes): SipHash-1-3 of one 64-bit word under a key drawn at random once per process. A public
// or invertible hash (XXH64 with seed 0, Mix64) lets a caller craft keys that all land in one
// shard and one slot, turning lookups linear and inserts quadratic; without the key no one can.
// SipHash-1-3 (one compression round, three finalization rounds: what Rust's and Python's hash
// tables use), inline, rather than a call of libsodium's SipHash-2-4 (crypto_shorthash): a pick
// with a long prompt hashes each of its 256 prefix blocks, and the call cost that pick 7.7% of its
// rate (bench/results/pick.md), at about 2.2 times the time of this one (README, "Reliability").
// The rounds are checked against libsodium's SipHash-2-4 with the same code
// (tests/unit/common/keyed_hash_test.cc). It only says
// where a key is kept: what a key means and where it is routed (placement, which must agree
// across replicas) stay on the public hashes.
//
//   const eoc::KeyedHash& keyed = eoc::KeyedHash::ForProcess();
//   std::uint64_t slot_key = keyed(session_hash);   // differs from process to process
#pragma once

#include <bit>
#include <cstdint>
#include <initializer_list>

namespace eoc {

// SipHash-c-d of the 8-byte message `word` (little-endian) under the key (k0, k1), each the
// little-endian reading of 8 of the key's 16 bytes.
template <int kCompression, int kFinalization>
constexpr std::uint64_t SipHashWord(std::uint64_t k0, std::uint64_t k1, std::uint64_t word) {
  std::uint64_t v0 = k0 ^ 0x736f6d6570736575ULL;
  std::uint64_t v1 = k1 ^ 0x646f72616e646f6dULL;
  std::uint64_t v2 = k0 ^ 0x6c7967656e657261ULL;
  std::uint64_t v3 = k1 ^ 0x7465646279746573ULL;
  auto rounds = [&](int n) {
    for (int i = 0; i < n; ++i) {
      v0 += v1;
      v1 = std::rotl(v1, 13) ^ v0;
      v0 = std::rotl(v0, 32);
      v2 += v3;
      v3 = std::rotl(v3, 16) ^ v2;
      v0 += v3;
      v3 = std::rotl(v3, 21) ^ v0;
      v2 += v1;
      v1 = std::rotl(v1, 17) ^ v2;
      v2 = std::rotl(v2, 32);
    }
  };
  // The one whole block, then the last (empty but for the length, 8, in its top byte).
  for (const std::uint64_t block : {word, std::uint64_t{8} << 56U}) {
    v3 ^= block;
    rounds(kCompression);
    v0 ^= block;
  }
  v2 ^= 0xffU;
  rounds(kFinalization);
  return v0 ^ v1 ^ v2 ^ v3;
}

class KeyedHash {
 public:
  constexpr KeyedHash(std::uint64_t k0, std::uint64_t k1) : k0_(k0), k1_(k1) {}
  // The process's hash, its key drawn once from the system's random source (libsodium's
  // randombytes); thread-safe.
  static const KeyedHash& ForProcess();

  constexpr std::uint64_t operator()(std::uint64_t value) const {
    return SipHashWord<1, 3>(k0_, k1_, value);
  }

 private:
  std::uint64_t k0_;
  std::uint64_t k1_;
};

}  // namespace eoc
