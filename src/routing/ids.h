// The identities the routing engine keys its tables by: 64-bit hashes, so that tables stay small
// and lookups never compare strings. Pure: no I/O, no Kubernetes, no JSON.
//
//   eoc::routing::WorkerKey w = eoc::routing::WorkerKeyOf("prod/vllm-7d9c-abcde");
//   eoc::routing::SessionHash s = eoc::routing::SessionHashOf("user-42-conversation-7");
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace eoc::routing {

// A worker across routing generations: the hash of its pod's "namespace/name". Stable while the
// pod lives, so session and prefix tables survive a new snapshot.
using WorkerKey = std::uint64_t;
// A session id (up to 256 bytes) as the session table stores it.
using SessionHash = std::uint64_t;
// One block of a prompt's prefix, hashed as DESIGN.md's pick endpoint says.
using BlockHash = std::uint64_t;

// SplitMix64's finalizer: a fixed bijective mix of 64 bits, stable across builds and replicas.
// It spreads a key's entropy over every bit, so that the top bits (a shard) and the low bits (a
// slot) are independent even for keys that are small integers rather than real hashes; the
// consistent-hash table uses it as its hash.
constexpr std::uint64_t Mix64(std::uint64_t x) {
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

// XXH64 with seed 0 of the pod's "namespace/name".
WorkerKey WorkerKeyOf(std::string_view pod);
// The longest session id accepted (DESIGN.md): callers refuse longer ones (the pick endpoint
// with 400) before hashing.
inline constexpr std::size_t kMaxSessionIdBytes = 256;
// The longest model name: the API's, a DNS subdomain's 253 bytes (IsModelName checks `models` and
// the eoc.dev/models annotation), so no worker lists a longer one; callers refuse longer ones (the
// pick endpoint with 400). Routing includes nothing of src/api; controller/routing_config.cc
// asserts that the two agree.
inline constexpr std::size_t kMaxModelNameBytes = 253;

// XXH64 with seed 0 of the session id's bytes.
SessionHash SessionHashOf(std::string_view session_id);

}  // namespace eoc::routing
