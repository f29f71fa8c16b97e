#include "controller/scale_in.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace eoc::controller {
namespace {

using TimePoint = std::chrono::system_clock::time_point;

// podPhaseToOrdinal: Pending, Unknown, Running; any other phase counts as Pending does (Go's zero).
int PhaseOrdinal(kube::PodPhase phase) {
  switch (phase) {
    case kube::PodPhase::kUnknown:
      return 1;
    case kube::PodPhase::kRunning:
      return 2;
    default:
      return 0;
  }
}

// Each comparison: negative when `a` goes first, positive when `b` does, 0 for a tie.
int Order(bool a_first) { return a_first ? -1 : 1; }

// Unassigned before assigned, Pending before Unknown before Running, not ready before ready.
int CompareAvailability(const ScaleInPod& a, const ScaleInPod& b) {
  if (a.node != b.node && (a.node.empty() || b.node.empty())) return Order(a.node.empty());
  if (PhaseOrdinal(a.phase) != PhaseOrdinal(b.phase)) {
    return Order(PhaseOrdinal(a.phase) < PhaseOrdinal(b.phase));
  }
  if (a.ready != b.ready) return Order(!a.ready);
  return 0;
}

// afterOrZero: the later time first, a missing one before any.
int CompareLaterFirst(const std::optional<TimePoint>& a, const std::optional<TimePoint>& b) {
  if (a == b) return 0;
  if (!a || !b) return Order(!a);
  return Order(*a > *b);
}

// ActivePodsWithRanks.Less, as a three-way comparison; `rank_*`: the set's active pods on the
// pod's node.
int CompareRanking(const ScaleInPod& a, int rank_a, const ScaleInPod& b, int rank_b) {
  if (const int c = CompareAvailability(a, b); c != 0) return c;
  if (rank_a != rank_b) return Order(rank_a > rank_b);
  if (a.ready && b.ready) {
    if (const int c = CompareLaterFirst(a.ready_since, b.ready_since); c != 0) return c;
  }
  if (a.restarts != b.restarts) return Order(a.restarts > b.restarts);
  return CompareLaterFirst(a.created, b.created);
}

// The ordinal of a StatefulSet pod "<set>-<n>"; nullopt for a name without one.
std::optional<std::int64_t> Ordinal(std::string_view name) {
  const auto dash = name.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view digits = name.substr(dash + 1);
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return n;
}

std::vector<std::string> Names(const std::vector<ScaleInPod>& pods, std::size_t count) {
  std::vector<std::string> out;
  out.reserve(std::min(count, pods.size()));
  for (std::size_t i = 0; i < pods.size() && i < count; ++i) out.push_back(pods[i].name);
  return out;
}

}  // namespace

bool IsActive(const kube::PodView& pod) {
  return !pod.terminating() && pod.phase != kube::PodPhase::kSucceeded &&
         pod.phase != kube::PodPhase::kFailed;
}

ScaleInPod ScaleInPodOf(const kube::PodView& pod, double load) {
  return {.name = pod.name,
          .node = pod.node_name,
          .phase = pod.phase,
          .ready = pod.ready,
          .ready_since = pod.ready_since,
          .restarts = pod.restarts,
          .created = pod.created,
          .load = load};
}

ScaleInOrder ScaleInOrderFor(std::string_view kind, int server_minor) {
  if (kind == "Deployment" || kind == "ReplicaSet") {
    return server_minor >= 22 ? ScaleInOrder::kDeletionCost : ScaleInOrder::kReplicaSetRanking;
  }
  if (kind == "StatefulSet") return ScaleInOrder::kHighestOrdinal;
  return ScaleInOrder::kNone;
}

std::vector<std::string> PodsToDrain(ScaleInOrder order, std::vector<ScaleInPod> pods,
                                     std::size_t count) {
  // By name first, so that what the orders leave tied comes out the same every time.
  std::sort(pods.begin(), pods.end(),
            [](const ScaleInPod& a, const ScaleInPod& b) { return a.name < b.name; });
  if (count == 0 || order == ScaleInOrder::kNone) return {};
  if (count >= pods.size()) return Names(pods, pods.size());
  switch (order) {
    case ScaleInOrder::kHighestOrdinal:
      std::stable_sort(pods.begin(), pods.end(), [](const ScaleInPod& a, const ScaleInPod& b) {
        const auto oa = Ordinal(a.name);
        const auto ob = Ordinal(b.name);
        if (oa.has_value() != ob.has_value()) return oa.has_value();
        return oa > ob;
      });
      return Names(pods, count);
    case ScaleInOrder::kDeletionCost:
      std::stable_sort(pods.begin(), pods.end(), [](const ScaleInPod& a, const ScaleInPod& b) {
        if (const int c = CompareAvailability(a, b); c != 0) return c < 0;
        return a.load < b.load;
      });
      return Names(pods, count);
    case ScaleInOrder::kReplicaSetRanking:
    case ScaleInOrder::kNone:
      break;
  }
  std::map<std::string, int> on_node;
  for (const ScaleInPod& p : pods) ++on_node[p.node];
  const auto rank = [&](const ScaleInPod& p) { return on_node[p.node]; };
  std::stable_sort(pods.begin(), pods.end(), [&](const ScaleInPod& a, const ScaleInPod& b) {
    return CompareRanking(a, rank(a), b, rank(b)) < 0;
  });
  // The last one removed, and every pod tied with it: the controller's sort may pick any.
  std::size_t end = count;
  const ScaleInPod& last = pods[count - 1];
  while (end < pods.size() && CompareRanking(pods[end], rank(pods[end]), last, rank(last)) == 0) {
    ++end;
  }
  return Names(pods, end);
}

}  // namespace eoc::controller
