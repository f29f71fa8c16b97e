// A pick's inputs and answers: what the pick endpoint hands PoolState::Pick and what it makes of
// the outcome (its status code, `reason`, `endpoint`, `generation`).
//
//   PickRequest request{.model = "llama-3-8b", .session = SessionHashOf("user-42")};
//   PickOutcome out = pool.Pick(request, rng(), now, wait);
//   if (out.picked()) answer(out.worker().address, ToString(out.reason));  // "session"
//   else if (out.status == PickStatus::kQueueFull) answer(429);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "routing/ids.h"
#include "routing/pool_snapshot.h"
#include "routing/prefix_hash.h"
#include "routing/worker.h"

namespace eoc::routing {

// Why a pick chose its worker; the pick endpoint's `reason`.
enum class PickReason { kSession, kSessionOverflow, kPrefix, kStrategy, kQueued };
// "session", "session-overflow", "prefix", "strategy", "queued".
std::string_view ToString(PickReason reason);

// What became of a pick. The pick endpoint answers kUnknownModel with 404, kTooLarge with 400,
// kQueueFull with 429, kUnavailable and kNotPublished with 503, kTimedOut with 504.
enum class PickStatus {
  kPicked,        // a worker was chosen
  kNoRoom,        // TryPick only: no worker has room now (Pick would wait)
  kQueued,        // waiting; `done` will be called
  kQueueFull,     // the wait queue holds max_queue picks
  kUnavailable,   // no worker to wait for and no way to get one, or queueing is off
  kNotPublished,  // the pool has no routing generation yet
  kTimedOut,      // the deadline passed while waiting (or before)
  kUnknownModel,  // the pool lists its models (Options::models) and not this one
  kTooLarge,      // asks for more tokens than the pool allows, or needs more KV blocks than
                  // the pool's largest worker holds in all
};
std::string_view ToString(PickStatus status);

// One pick's inputs. Views: they need only outlive the call (Pick copies what a waiting pick
// keeps).
struct PickRequest {
  std::string_view model;              // empty: any model; longer than kMaxModelNameBytes: none
  std::optional<SessionHash> session;  // SessionHashOf(session id)
  std::span<const BlockHash> prefix;   // the prompt's block hashes (PrefixHashes), may be empty
  std::int64_t prompt_tokens = 0;      // 0 or less: the pool's default
  std::int64_t expected_tokens = 0;    // 0 or less: the pool's default
};

struct PickOutcome {
  PickStatus status = PickStatus::kUnavailable;
  PickReason reason = PickReason::kStrategy;     // when kPicked
  std::size_t index = 0;                         // the worker's index in `snapshot`
  std::shared_ptr<const PoolSnapshot> snapshot;  // when kPicked: the generation it came from
  std::uint64_t ticket = 0;                      // when kQueued: for Cancel
  bool new_session = false;  // when picked for a session: it was bound now (else it was bound)
  // When kTooLarge by the largest worker: the blocks the request needs, and the most that worker
  // holds, in its blocks; 0 otherwise.
  std::int64_t blocks_needed = 0;
  std::int64_t blocks_largest = 0;
  // When kTooLarge by the pool's own bound (Options::max_request_tokens): the tokens the request
  // asks for (prompt plus expected) and that bound; 0 otherwise.
  std::int64_t tokens_asked = 0;
  std::int64_t tokens_allowed = 0;

  bool picked() const { return status == PickStatus::kPicked; }
  // When picked: the worker (its address, pod, key).
  const Worker& worker() const { return snapshot->worker(index); }
};

using PickCallback = std::function<void(const PickOutcome&)>;

}  // namespace eoc::routing
