// A keyed hash for in-memory tables whose keys callers choose (session ids, prompts' prefix
// hashes): SipHash-2-4 (libsodium's crypto_shorthash) under a key drawn at random once per process.
// A public or invertible hash (XXH64 with seed 0, Mix64) lets a caller craft keys that all land in
// one shard and one slot, turning lookups linear and inserts quadratic; without the key no one can.
// It only says where a key is kept: what a key means and where it is routed (placement, which must
// agree across replicas) stay on the public hashes.
//
//   const eoc::KeyedHash& keyed = eoc::KeyedHash::ForProcess();
//   std::uint64_t slot_key = keyed(session_hash);   // differs from process to process
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace eoc {

class KeyedHash {
 public:
  static constexpr std::size_t kKeyBytes = 16;
  using Key = std::array<unsigned char, kKeyBytes>;

  explicit KeyedHash(const Key& key) : key_(key) {}
  // The process's hash, its key drawn once from the system's random source (libsodium's
  // randombytes); thread-safe.
  static const KeyedHash& ForProcess();

  std::uint64_t operator()(std::uint64_t value) const;
  std::uint64_t operator()(std::string_view bytes) const;

 private:
  Key key_;
};

}  // namespace eoc
