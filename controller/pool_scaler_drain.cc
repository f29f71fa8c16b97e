// The autoscaler's scale-in that drains (pool_scaler.h, scale_in.h): which pods go, pinning them
// where the deletion cost is honoured, waiting for their requests, then /scale.
#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "controller/pool_scaler.h"
#include "controller/pool_scaler_state.h"
#include "controller/workers.h"
#include "routing/ids.h"
#include "telemetry/logging.h"

namespace eoc::controller {
namespace {

const telemetry::Logger& Log() {
  static const telemetry::Logger log("autoscaler");
  return log;
}

Clock::TimePoint::duration SecondsOf(double seconds) {
  return std::chrono::duration_cast<Clock::TimePoint::duration>(
      std::chrono::duration<double>(seconds));
}

// "a, b"; "no pod" for none.
std::string Join(const std::vector<std::string>& names) {
  if (names.empty()) return "no pod";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The pool's scraped loads by worker, as this replica's routing state has them; empty without one.
std::unordered_map<routing::WorkerKey, routing::PoolState::ObservedLoad> LoadsByWorker(
    const routing::PoolDirectory* directory, const std::string& key) {
  std::unordered_map<routing::WorkerKey, routing::PoolState::ObservedLoad> loads;
  if (directory == nullptr) return loads;
  if (const auto state = directory->Find(key)) {
    for (const auto& observed : state->Loads()) loads.emplace(observed.worker, observed);
  }
  return loads;
}

// Requests a worker holds or is about to: running and waiting as scraped, and this replica's
// picks to it since.
double RequestsInFlight(const routing::PoolState::ObservedLoad& observed) {
  return observed.load.running + observed.load.waiting + observed.picks_since_scrape;
}

bool PinnedByDrain(const kube::PodView& pod) {
  const std::string* cost = kube::Lookup(pod.annotations, kube::kDeletionCostAnnotation);
  return cost != nullptr && *cost == kDrainDeletionCost;
}

}  // namespace

std::optional<ScaleInOrder> PoolScaler::OrderFor(const api::ScaleTargetRef& ref) {
  const ScaleInOrder by_kind = ScaleInOrderFor(ref.kind, 0);
  if (by_kind != ScaleInOrder::kReplicaSetRanking) return by_kind;  // the version does not matter
  if (options_.deletion_cost) {
    return *options_.deletion_cost ? ScaleInOrder::kDeletionCost : ScaleInOrder::kReplicaSetRanking;
  }
  {
    const std::lock_guard lock(mu_);
    if (server_minor_) return ScaleInOrderFor(ref.kind, *server_minor_);
  }
  auto minor = scales_.ServerMinor();
  if (!minor) {
    Log().Warn("reading the server's version failed: a scale-in waits for it",
               {{"error", minor.error().ToString()}});
    return std::nullopt;
  }
  const std::lock_guard lock(mu_);
  server_minor_ = *minor;
  return ScaleInOrderFor(ref.kind, *minor);
}

std::vector<std::shared_ptr<const kube::PodView>> PoolScaler::ActivePods(
    const api::InferencePool& pool, const State& s) const {
  const api::LabelSelector* workload = s.scale && s.scale->selector ? &*s.scale->selector : nullptr;
  std::vector<std::shared_ptr<const kube::PodView>> out;
  for (auto& pod : store_.ListPods()) {
    if (Selects(pool, *pod) && IsActive(*pod) &&
        (workload == nullptr || workload->Matches(pod->labels))) {
      out.push_back(std::move(pod));
    }
  }
  return out;
}

std::optional<double> PoolScaler::InFlight(const std::string& key, const api::InferencePool& pool,
                                           const Drain& drain) const {
  const std::shared_ptr<const PoolMembers> members = members_(key);
  const auto loads = LoadsByWorker(options_.directory, key);
  std::unordered_set<std::string_view> serving;
  if (members) {
    for (const routing::Worker& w : members->workers) serving.insert(PodName(w));
  }
  double total = 0;
  for (const std::string& pod : drain.pods) {
    // A pod that no longer serves (not ready, terminating, gone) takes no requests.
    if (!serving.contains(pod)) continue;
    const auto it = loads.find(routing::WorkerKeyOf(pool.ns + "/" + pod));
    if (it == loads.end() || !it->second.load.available) return std::nullopt;
    total += RequestsInFlight(it->second);
  }
  return total;
}

bool PoolScaler::Pin(const api::InferencePool& pool, Drain& drain,
                     const std::vector<std::shared_ptr<const kube::PodView>>& pods) {
  bool all = true;
  for (const auto& pod : pods) {
    const bool drained = drain.Has(pod->name);
    if (drained == (PinnedByDrain(*pod) || drain.pinned.contains(pod->name))) continue;
    if (!Fenced()) return false;
    auto set = scales_.SetDeletionCost(
        pool.ns, pod->name,
        drained ? std::optional<std::string_view>(kDrainDeletionCost) : std::nullopt);
    if (!set) {
      Log().Warn(drained ? "pinning a drained pod failed" : "unpinning a pod failed",
                 {{"pod", pool.ns + "/" + pod->name}, {"error", set.error().ToString()}});
      all = all && !drained;
      continue;
    }
    if (drained) {
      drain.pinned.insert(pod->name);
    } else {
      drain.pinned.erase(pod->name);
    }
  }
  return all;
}

void PoolScaler::PlanDrain(const std::string& key, const api::InferencePool& pool, State& s,
                           ScaleInOrder order, std::int32_t replicas,
                           const std::vector<std::shared_ptr<const kube::PodView>>& pods,
                           Clock::TimePoint now) {
  const auto loads = LoadsByWorker(options_.directory, key);
  std::vector<ScaleInPod> candidates;
  candidates.reserve(pods.size());
  for (const auto& pod : pods) {
    const auto it = loads.find(routing::WorkerKeyOf(pool.ns + "/" + pod->name));
    candidates.push_back(ScaleInPodOf(*pod, it == loads.end() ? 0 : RequestsInFlight(it->second)));
  }
  const std::int32_t from = *s.written;
  const auto count = static_cast<std::size_t>(from - replicas);
  std::vector<std::string> chosen = PodsToDrain(order, std::move(candidates), count);
  // Ties at the cut are all drained, but never so many that fewer than `replicas` are left.
  const std::size_t most = pods.size() - std::min(pods.size(), static_cast<std::size_t>(replicas));
  chosen.resize(std::min(chosen.size(), std::max(most, count)));
  std::sort(chosen.begin(), chosen.end());

  Drain next{.from = from, .to = replicas, .pods = std::move(chosen), .since = now, .marked = now};
  const bool changed = !s.drain || s.drain->pods != next.pods;
  if (s.drain) {
    next.since = s.drain->since;  // fewer (or other) pods, the same drain
    if (!changed) next.marked = s.drain->marked;
    next.pinned = std::move(s.drain->pinned);
  }
  s.drain = std::move(next);
  if (metrics_ != nullptr) metrics_->Draining(pool.ns, pool.name, s.drain->pods.size());
  if (!changed) return;
  const api::AutoscalingSpec& a = pool.spec.autoscaling;
  events_.Record(PoolReference(pool), kube::EventType::kNormal, reasons::kDraining,
                 "draining " + Join(s.drain->pods) + " to scale " +
                     TargetName(*pool.spec.scale_target_ref) + " from " + std::to_string(from) +
                     " to " + std::to_string(replicas) +
                     ": /scale is written once they have no requests, or after " +
                     Number(a.drain_timeout_seconds) + " s");
}

void PoolScaler::CancelDrain(const api::InferencePool& pool, State& s, const std::string& why) {
  if (!s.drain) return;
  if (!s.drain->written) {
    Drain none{.pinned = std::move(s.drain->pinned)};
    std::vector<std::shared_ptr<const kube::PodView>> pinned;
    for (auto& pod : ActivePods(pool, s)) {
      if (none.pinned.contains(pod->name) || PinnedByDrain(*pod)) pinned.push_back(std::move(pod));
    }
    (void)Pin(pool, none, pinned);
    events_.Record(
        PoolReference(pool), kube::EventType::kNormal, "DrainCancelled",
        "no longer draining " + Join(s.drain->pods) + ": " + why + "; they take work again");
    if (metrics_ != nullptr) metrics_->Drained(pool.ns, pool.name, "cancelled");
  }
  EndDrain(pool, s);
}

void PoolScaler::EndDrain(const api::InferencePool& pool, State& s) {
  s.drain.reset();
  if (metrics_ != nullptr) metrics_->Draining(pool.ns, pool.name, 0);
}

void PoolScaler::FollowWrittenDrain(const api::InferencePool& pool, State& s,
                                    Clock::TimePoint now) {
  if (!s.drain || !s.drain->written) return;
  const auto pods = ActivePods(pool, s);
  const bool any_left = std::any_of(pods.begin(), pods.end(),
                                    [&](const auto& pod) { return s.drain->Has(pod->name); });
  // Gone; or the workload has shrunk and removed others (those left take work again); or it
  // has not acted within the timeout.
  if (!any_left || pods.size() <= static_cast<std::size_t>(s.drain->to) ||
      now - *s.drain->written >= SecondsOf(pool.spec.autoscaling.drain_timeout_seconds)) {
    EndDrain(pool, s);
  }
}

kube::Result<bool> PoolScaler::ScaleIn(const std::string& key, const PoolObject& object, State& s,
                                       std::int32_t replicas, const std::string& why,
                                       Clock::TimePoint now, ScalingReport& report) {
  const api::InferencePool& pool = object.pool;
  const api::AutoscalingSpec& a = pool.spec.autoscaling;
  const api::ScaleTargetRef& ref = *pool.spec.scale_target_ref;
  if (s.drain && s.drain->written) {
    // The last scale-in's pods are still going: a further shrink waits for them; growing again
    // leaves them to the workload.
    if (replicas <= *s.written) return false;
    EndDrain(pool, s);
    return Apply(key, pool, s, replicas, why);
  }
  if (replicas >= *s.written) {
    // No longer shrinking: the drained pods take work again.
    CancelDrain(pool, s,
                "the decision is " + std::to_string(replicas) + " replicas, not fewer than " +
                    std::to_string(*s.written));
    s.target = replicas;
    if (replicas == *s.written) return false;
    return Apply(key, pool, s, replicas, why);
  }
  const std::optional<ScaleInOrder> order = OrderFor(ref);
  if (!order) {
    report = MakeReport("True", reasons::kDraining,
                        "not scaling in yet: the API server's version (which says how a " +
                            ref.kind + " removes pods) could not be read");
    return false;
  }
  if (*order == ScaleInOrder::kNone) return Apply(key, pool, s, replicas, why);
  const bool plan = !s.drain || s.drain->to != replicas;
  const bool pins = *order == ScaleInOrder::kDeletionCost;
  std::vector<std::shared_ptr<const kube::PodView>> pods;
  if (plan || pins) pods = ActivePods(pool, s);
  if (plan) PlanDrain(key, pool, s, *order, replicas, pods, now);
  s.target = replicas;
  Drain& drain = *s.drain;
  const bool pinned = !pins || Pin(pool, drain, pods);
  const std::optional<double> in_flight = InFlight(key, pool, drain);
  // A zero counts once a scrape after the table marked them draining can have been seen.
  const auto settle = SecondsOf(pool.spec.metrics.interval_seconds + 1.0);
  const bool drained = in_flight && *in_flight == 0 && now - drain.marked >= settle;
  const bool timed_out = now - drain.since >= SecondsOf(a.drain_timeout_seconds);
  // Past the timeout /scale is written whatever the pods say (pinned or not: a cluster that
  // refuses the patch still scales in).
  if (!(pinned && drained) && !timed_out) {
    report =
        MakeReport("True", reasons::kDraining,
                   "draining " + Join(drain.pods) + " before scaling " + TargetName(ref) +
                       " from " + std::to_string(drain.from) + " to " + std::to_string(replicas) +
                       (pinned ? ": " + (in_flight ? Number(*in_flight) : std::string("unknown")) +
                                     " requests still in flight"
                               : ": pinning them with the deletion cost failed, trying again"));
    if (metrics_ != nullptr) metrics_->Held(pool.ns, pool.name, reasons::kDraining);
    return false;
  }
  const std::string after =
      drained && pinned
          ? "; after draining " + Join(drain.pods)
          : "; the drain of " + Join(drain.pods) + " timed out with " +
                (in_flight ? Number(*in_flight) : std::string("an unknown number of")) +
                " requests in flight";
  auto applied = Apply(key, pool, s, replicas, why + after);
  if (!applied || !*applied) return applied;
  drain.written = now;
  if (metrics_ != nullptr) {
    metrics_->Drained(pool.ns, pool.name, drained && pinned ? "drained" : "timeout");
  }
  return true;
}

}  // namespace eoc::controller
