// Where a pool's spec and workers become its routing state: the one place where the API's
// `spec.routing` (api::RoutingSpec, with the CRD's defaults) is mapped onto the engine's options
// (routing::PoolState::Options) and the pick endpoint's settings (server::PoolHttpSettings) and
// publish rules, and the published table (status.routing,
// api::RoutingTable) onto the engine's workers, and where the reconciler writes the pool
// directory that the pick path reads. `api` and `routing` may not include each other (DESIGN.md),
// so this mapping lives here, in controller/, and nowhere else; the words both share (Strategy,
// Accelerator, EnergyProfile) are one definition in common/routing_terms.h, so nothing else needs
// mapping.
//
//   routing::PoolState::Options options = RoutingOptions(pool.spec);
//   UpdatePoolDirectory(directory, &picks, pool, members.workers, clock.Now());  // after
//   SelectWorkers PublishDecision d = DecideTablePublish(pool, candidate, last_written,
//   clock.Now());  // leader picks.Remove(key); // the pool is gone: directory.Remove(key); //
//   picks first
#pragma once

#include <chrono>
#include <span>
#include <vector>

#include "api/inference_pool.h"
#include "routing/pool_directory.h"
#include "routing/pool_state.h"
#include "routing/publish_decision.h"
#include "routing/worker.h"
#include "server/pick_pools.h"

namespace eoc::controller {

// The engine's options for a pool with `spec` (its `routing` block and `models`; a waiting pick
// holds others for one metrics.intervalSeconds; and picks may wait while the pool has no worker
// when the autoscaler applies its decisions and may run a replica: enabled, mode Apply,
// maxReplicas at least 1, as it can scale from zero).
routing::PoolState::Options RoutingOptions(const api::InferencePoolSpec& spec);

// The pick endpoint's settings of a pool with spec.routing `routing`: the session header
// (sessionAffinity.header) and the queue timeout (admission.queueTimeoutSeconds; below 0 counts as
// 0).
server::PoolHttpSettings PickSettings(const api::RoutingSpec& routing);

// The pool's spec.routing publish rules: publishThreshold and publishIntervalSeconds.
routing::PublishRules PublishRulesOf(const api::RoutingSpec& routing);

// The workers of the pool's published table (status.routing) as the engine's workers (key, pod
// "namespace/name", address, weight, draining, models); empty when nothing is published.
std::vector<routing::Worker> TableWorkers(const api::InferencePool& pool);

// DecidePublish for `candidate` (the workers with the weights the leader computed, as the table
// would list them) against the pool's published table, last written at `published_at`, under the
// pool's spec. A pool with no table, or one whose strategy this operator cannot read, publishes
// now (kFirst).
routing::PublishDecision DecideTablePublish(const api::InferencePool& pool,
                                            std::span<const routing::Worker> candidate,
                                            std::chrono::steady_clock::time_point published_at,
                                            std::chrono::steady_clock::time_point now);

// Brings the pool's entry in `directory`, and in `picks` (the pick endpoint's table, with the
// pool's PickSettings; null: none), up to date with a valid `pool` and its `workers`: adds it, or
// reconfigures its state in place when spec.routing changed (PoolState::Reconfigure says what
// survives), and gives it a new snapshot when its workers, their weights, the strategy or the
// generation changed. Membership is this replica's own and immediate: the snapshot holds the
// workers the table lists (PublishedWorkers of `workers`), whatever the published table says.
// Weights and draining come from the published table (status.routing), so every replica places
// new sessions alike: a worker the table lists has its published weight and draining flag; one it
// does not list yet has weight 0 (it takes no new placement until the leader lists it, within a
// second); a worker the table
// lists that is not among `workers` is absent. Before the first publication (no status.routing)
// the pool has no snapshot: its picks answer kNotPublished (503). (Should status.routing vanish
// later, the pool keeps a snapshot of its workers, each weighing routing::kMaxWeight, until the
// leader publishes again.) The generation is the table's when the snapshot's
// workers match it, else the next (the one the leader's next table will have). Unchanged, it
// costs a comparison of the list (building a snapshot costs about 25 ms at 1,000 workers).
void UpdatePoolDirectory(routing::PoolDirectory& directory, server::PickPools* picks,
                         const api::InferencePool& pool,
                         const std::vector<routing::Worker>& workers,
                         std::chrono::steady_clock::time_point now);

}  // namespace eoc::controller
