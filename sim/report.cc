#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>

namespace eoc::sim {
namespace {

using nlohmann::json;

// The nearest-rank percentile `p` (0..100) of sorted, non-empty `v`.
double Rank(const std::vector<double>& v, double p) {
  const auto n = static_cast<double>(v.size());
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(p / 100.0 * n)));
  return v[std::min(rank, v.size()) - 1];
}

json LatencyJson(const LatencySummary& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50},
          {"p90", s.p90},     {"p99", s.p99},   {"max", s.max}};
}

std::string Fixed(double value, int digits) {
  std::vector<char> buf(64);
  std::snprintf(buf.data(), buf.size(), "%.*f", digits, value);
  return buf.data();
}

}  // namespace

LatencySummary Summarise(std::vector<double> samples) {
  LatencySummary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = samples.size();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.count);
  s.p50 = Rank(samples, 50);
  s.p90 = Rank(samples, 90);
  s.p99 = Rank(samples, 99);
  s.max = samples.back();
  return s;
}

json ToJson(const RunReport& r, bool samples) {
  json classes = json::object();
  for (const auto& [name, c] : r.classes) {
    classes[name] = {{"requests", c.requests},
                     {"outputTokens", c.output_tokens},
                     {"joules", c.joules},
                     {"grams", c.grams},
                     {"joulesPerToken",
                      c.output_tokens > 0 ? c.joules / static_cast<double>(c.output_tokens) : 0.0}};
  }
  json events = json::array();
  for (const ScaleEvent& e : r.scale_events) {
    events.push_back({{"seconds", e.seconds}, {"from", e.from}, {"to", e.to}});
  }
  json out = {{"policy", r.policy},
              {"strategy", r.strategy},
              {"requests", r.requests},
              {"finished", r.finished},
              {"shed", r.shed},
              {"timedOut", r.timed_out},
              {"pickReasons", r.pick_reasons},
              {"refusals", r.refusals},
              {"ttftSeconds", LatencyJson(r.ttft)},
              {"tpotSeconds", LatencyJson(r.tpot)},
              {"e2eSeconds", LatencyJson(r.e2e)},
              {"sloAttainment", r.slo_attainment},
              {"simulatedSeconds", r.simulated_seconds},
              {"promptTokens", r.prompt_tokens},
              {"outputTokens", r.output_tokens},
              {"outputTokensPerSecond", r.output_tokens_per_second},
              {"replicaSeconds", r.replica_seconds},
              {"scaleUps", r.scale_ups},
              {"scaleDowns", r.scale_downs},
              {"directionFlips", r.direction_flips},
              {"scaleEvents", std::move(events)},
              {"joules", r.joules},
              {"idleJoules", r.idle_joules},
              {"grams", r.grams},
              {"joulesPerToken", r.joules_per_token},
              {"gramsPerToken", r.grams_per_token},
              {"prefixHitRate", r.prefix_hit_rate},
              {"preemptions", r.preemptions},
              {"loadImbalance", r.load_imbalance},
              {"capacityImbalance", r.capacity_imbalance},
              {"classes", std::move(classes)}};
  if (samples) {
    json series = json::array();
    for (const Sample& s : r.samples) {
      series.push_back({s.seconds, s.replicas, s.ready, s.target, s.in_flight, s.waiting, s.watts});
    }
    out["sampleSeconds"] = r.sample_seconds;
    out["samples"] = {
        {"columns", {"seconds", "replicas", "ready", "target", "inFlight", "waiting", "watts"}},
        {"rows", std::move(series)}};
    out["ttftSamples"] = r.ttft_samples;
    out["e2eSamples"] = r.e2e_samples;
  }
  return out;
}

std::string ComparisonTable(const std::vector<RunReport>& reports) {
  const std::vector<std::string> head = {
      "policy",   "strategy", "requests", "done",   "shed",  "timeout", "ttft p50", "ttft p99",
      "tpot p50", "slo %",    "J/tok",    "mg/tok", "rep-s", "scales",  "imbal",    "prefix %"};
  std::vector<std::vector<std::string>> rows = {head};
  for (const RunReport& r : reports) {
    rows.push_back({r.policy, r.strategy, std::to_string(r.requests), std::to_string(r.finished),
                    std::to_string(r.shed), std::to_string(r.timed_out), Fixed(r.ttft.p50, 3),
                    Fixed(r.ttft.p99, 3), Fixed(r.tpot.p50, 4), Fixed(100 * r.slo_attainment, 1),
                    Fixed(r.joules_per_token, 4), Fixed(1000 * r.grams_per_token, 4),
                    Fixed(r.replica_seconds, 0), std::to_string(r.scale_ups + r.scale_downs),
                    Fixed(r.load_imbalance, 2), Fixed(100 * r.prefix_hit_rate, 1)});
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      // Names to the left, figures to the right.
      out += i < 2 ? row[i] + pad : pad + row[i];
      out += i + 1 < row.size() ? "  " : "\n";
    }
  }
  return out;
}

}  // namespace eoc::sim
