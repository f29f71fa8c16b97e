// The identities the routing engine keys its tables by: 64-bit hashes, so that tables stay small
// and lookups never compare strings. Pure: no I/O, no Kubernetes, no JSON.
//
//   eoc::routing::WorkerKey w = eoc::routing::WorkerKeyOf("prod/vllm-7d9c-abcde");
//   eoc::routing::SessionHash s = eoc::routing::SessionHashOf("user-42-conversation-7");
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/mix64.h"

namespace eoc::routing {

// A worker across routing generations: the hash of its pod's "namespace/name". Stable while the
// pod lives, so session and prefix tables survive a new snapshot.
using WorkerKey = std::uint64_t;
// A session id (up to 256 bytes) as the session table stores it.
using SessionHash = std::uint64_t;
// One block of a prompt's prefix, hashed as DESIGN.md's pick endpoint says.
using BlockHash = std::uint64_t;

// The engine's 64-bit mix (common/mix64.h), under the engine's name too.
using ::eoc::Mix64;

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
