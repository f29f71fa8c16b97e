// When the leader republishes a pool's routing table (DESIGN.md, the InferencePool status): at
// once (at most once a second) when membership or draining changes, otherwise only when a weight
// moves past a threshold, at most every publishIntervalSeconds, and never while nothing material
// changed, so that status is not rewritten by weights that wobble. Pure: no I/O, time passed in.
//
//   const PublishRules rules{.threshold = 50, .interval = std::chrono::seconds(10)};
//   PublishDecision d = DecidePublish(last, strategy, candidate_workers, now, rules);
//   switch (d.verdict) {
//     case PublishVerdict::kNow: write(candidate); last = {strategy, candidate, now}; break;
//     case PublishVerdict::kNotYet: requeue_after(d.earliest - now); break;
//     case PublishVerdict::kNothing: break;  // wait for the next change
//   }
//   log("publishing", ToString(d.reason));      // "membership"
//
// The tables are routing::Worker lists as the snapshot holds them: a worker is its key, and what
// the decision reads of it is its address, models, weight and draining flag (order does not
// matter). The rules, with `last` the table last published (at `last->at`):
//   1. Nothing published yet: publish now (kFirst), even an empty table.
//   2. The strategy changed (kStrategy), or membership did (kMembership: a worker joined or left,
//      or a worker's address or models changed), or a draining flag did (kDraining): publish at
//      last->at + min_gap (1 s) or now, whichever is later.
//   3. Otherwise, some worker's weight moved by more than `threshold` from its published weight
//      (|candidate - published| > threshold, strictly; any one worker suffices): publish at
//      last->at + interval (never less than min_gap) or now, whichever is later (kWeights).
//   4. Otherwise nothing material changed: kNothing, whatever the time.
// The gaps count from the last publication, whatever its reason (each publication carries the
// whole table, weights included). Weights are compared with the published table, not with the
// previous candidate, so small moves that add up publish once their sum passes the threshold; a
// move back within the threshold before its time comes cancels the publication. When several
// rules apply, the earliest time wins (on a tie, the first rule's reason). A time exactly at the
// gap or the interval is in time. Nothing publishes twice within min_gap.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "routing/worker.h"

namespace eoc::routing {

// What a publication is rated by (the pool's spec.routing).
struct PublishRules {
  // routing.publishThreshold: how far a weight (of kMaxWeight) must move to be published; values
  // below 0 act as 0 (any move publishes).
  std::int32_t threshold = 50;
  // routing.publishIntervalSeconds: the least time between publications for moved weights.
  std::chrono::steady_clock::duration interval = std::chrono::seconds(10);
  // The least time between publications for membership, draining or strategy changes.
  std::chrono::steady_clock::duration min_gap = std::chrono::seconds(1);
};

// The table last published and when.
struct LastPublication {
  Strategy strategy = Strategy::kJouleWeighted;
  std::span<const Worker> workers;
  std::chrono::steady_clock::time_point at;
};

// Why a table is (or will be) published; for logs and metrics.
enum class PublishReason { kFirst, kStrategy, kMembership, kDraining, kWeights };
// "first", "strategy", "membership", "draining", "weights".
std::string_view ToString(PublishReason reason);

enum class PublishVerdict {
  kNow,      // publish the candidate now
  kNotYet,   // something material changed: publish at `earliest` if it still stands then
  kNothing,  // nothing material changed
};
// "now", "not-yet", "nothing".
std::string_view ToString(PublishVerdict verdict);

struct PublishDecision {
  PublishVerdict verdict = PublishVerdict::kNothing;
  PublishReason reason = PublishReason::kFirst;  // for kNow and kNotYet
  // kNotYet: the earliest time it may publish (decide again then); kNow: `now`; kNothing: unset.
  std::chrono::steady_clock::time_point earliest;

  bool publish() const { return verdict == PublishVerdict::kNow; }
  bool operator==(const PublishDecision&) const = default;
};

// Whether to publish `candidate` (under `strategy`) now, given `last` (none: never published).
PublishDecision DecidePublish(const std::optional<LastPublication>& last, Strategy strategy,
                              std::span<const Worker> candidate,
                              std::chrono::steady_clock::time_point now, const PublishRules& rules);

}  // namespace eoc::routing
