#include "routing/publish_decision.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace eoc::routing {
namespace {

// The workers of a table in key order, so that two tables compare whatever their own order.
std::vector<const Worker*> ByKey(std::span<const Worker> workers) {
  std::vector<const Worker*> out;
  out.reserve(workers.size());
  for (const Worker& w : workers) out.push_back(&w);
  std::sort(out.begin(), out.end(),
            [](const Worker* a, const Worker* b) { return a->key < b->key; });
  return out;
}

// What rule 2 and rule 3 find between the published table and the candidate.
struct Changes {
  bool membership = false;
  bool draining = false;
  bool weights = false;  // some weight moved by more than the threshold
};

Changes Compare(std::span<const Worker> published, std::span<const Worker> candidate,
                std::int32_t threshold) {
  Changes changes;
  if (published.size() != candidate.size()) changes.membership = true;
  const auto before = ByKey(published);
  const auto after = ByKey(candidate);
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() && a != after.end()) {
    const Worker& was = **b;
    const Worker& is = **a;
    if (was.key != is.key) {  // one side has a worker the other has not
      changes.membership = true;
      (was.key < is.key ? b : a) += 1;
      continue;
    }
    if (was.address != is.address || was.capability.models != is.capability.models) {
      changes.membership = true;
    }
    if (was.draining != is.draining) changes.draining = true;
    if (std::abs(static_cast<std::int64_t>(is.weight) - was.weight) > threshold) {
      changes.weights = true;
    }
    ++b;
    ++a;
  }
  if (b != before.end() || a != after.end()) changes.membership = true;
  return changes;
}

}  // namespace

std::string_view ToString(PublishReason reason) {
  switch (reason) {
    case PublishReason::kFirst:
      return "first";
    case PublishReason::kStrategy:
      return "strategy";
    case PublishReason::kMembership:
      return "membership";
    case PublishReason::kDraining:
      return "draining";
    case PublishReason::kWeights:
      return "weights";
  }
  return "unknown";
}

std::string_view ToString(PublishVerdict verdict) {
  switch (verdict) {
    case PublishVerdict::kNow:
      return "now";
    case PublishVerdict::kNotYet:
      return "not-yet";
    case PublishVerdict::kNothing:
      return "nothing";
  }
  return "unknown";
}

PublishDecision DecidePublish(const std::optional<LastPublication>& last, Strategy strategy,
                              std::span<const Worker> candidate,
                              std::chrono::steady_clock::time_point now,
                              const PublishRules& rules) {
  if (!last) {
    return {.verdict = PublishVerdict::kNow, .reason = PublishReason::kFirst, .earliest = now};
  }
  const Changes changes = Compare(last->workers, candidate, std::max(rules.threshold, 0));
  std::optional<PublishDecision> next;  // kNotYet, at the earliest time a rule allows
  const auto propose = [&](PublishReason reason, std::chrono::steady_clock::duration gap) {
    const auto at = last->at + gap;
    if (!next || at < next->earliest) {
      next = PublishDecision{.verdict = PublishVerdict::kNotYet, .reason = reason, .earliest = at};
    }
  };
  if (last->strategy != strategy) {
    propose(PublishReason::kStrategy, rules.min_gap);
  } else if (changes.membership) {
    propose(PublishReason::kMembership, rules.min_gap);
  } else if (changes.draining) {
    propose(PublishReason::kDraining, rules.min_gap);
  }
  if (changes.weights) propose(PublishReason::kWeights, std::max(rules.interval, rules.min_gap));
  if (!next) return {.verdict = PublishVerdict::kNothing};
  if (next->earliest <= now) {
    next->verdict = PublishVerdict::kNow;
    next->earliest = now;
  }
  return *next;
}

}  // namespace eoc::routing
