#include "sim/scenario.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/yaml_json.h"

namespace eoc::sim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kScenario = R"(
seed: 7
trace:
  path: traces/azure.csv
  durationSeconds: 600
  rateScale: 1.5
  sessions: {share: 0.3}
profiles:
  mlenergy: energy-profiles/mlenergy.csv
  gpus: /data/gpus.csv
  version: v3.0
  task: lm-arena-chat
  model: meta-llama/Llama-3.1-8B-Instruct
accelerators:
  - name: NVIDIA-H100-80GB-HBM3
    gpu: H100-80GB-HBM3
    kvCacheTokens: 300000
    prefillTokensPerSecond: 20000
  - name: NVIDIA-B200
    gpu: B200
    idleWatts: 140
    kvCacheTokens: 1200000
    prefillTokensPerSecond: 40000
    maxNumSeqs: 512
zones:
  - {name: eu-north-1, gramsPerKwh: 30}
  - name: eu-west-1
    hourlyGramsPerKwh: [200, 200, 200, 200, 200, 200, 250, 300, 300, 280, 260, 240,
                        220, 220, 230, 250, 280, 320, 350, 330, 300, 260, 230, 210]
fleet:
  - {name: h100, accelerator: NVIDIA-H100-80GB-HBM3, zone: eu-west-1, replicas: 4,
     scaleTarget: true}
  - {name: b200, accelerator: NVIDIA-B200, zone: eu-north-1, replicas: 2}
coldStartSeconds: 45
slo: {ttftSeconds: 1.5}
pool:
  routing: {strategy: JouleWeighted}
  autoscaling: {minReplicas: 1, maxReplicas: 8}
policies:
  - {name: joules}
  - {name: round-robin, pool: {routing: {strategy: RoundRobin}}}
)";

json Doc(const std::string& yaml) {
  std::string error;
  std::optional<json> doc = ParseYaml(yaml, error);
  EXPECT_TRUE(doc.has_value()) << error;
  return doc.value_or(json());
}

std::string ErrorOf(const json& doc) {
  try {
    (void)ReadScenario(doc, "/scenarios");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted " << doc.dump();
  return "";
}

TEST(ReadScenario, ReadsEveryPart) {
  const Scenario s = ReadScenario(Doc(kScenario), "/scenarios");
  EXPECT_EQ(s.seed, 7U);
  EXPECT_EQ(s.trace.seed, 7U);
  EXPECT_EQ(s.trace_path, "/scenarios/traces/azure.csv");
  EXPECT_EQ(s.trace.duration_seconds, 600);
  EXPECT_EQ(s.trace.rate_scale, 1.5);
  EXPECT_EQ(s.trace.sessions.share, 0.3);
  EXPECT_EQ(s.trace.sessions.mean_turns, 4);  // TraceOptions' default
  EXPECT_EQ(s.mlenergy_csv, "/scenarios/energy-profiles/mlenergy.csv");
  EXPECT_EQ(s.gpus_csv, "/data/gpus.csv");
  ASSERT_EQ(s.accelerators.size(), 2U);
  EXPECT_EQ(s.accelerators[0].profile.gpu, "H100-80GB-HBM3");
  EXPECT_EQ(s.accelerators[0].profile.model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(s.accelerators[0].profile.version, "v3.0");
  EXPECT_FALSE(s.accelerators[0].idle_watts.has_value());
  EXPECT_EQ(s.accelerators[0].engine.max_num_seqs, 256);
  EXPECT_EQ(s.accelerators[1].idle_watts, 140);
  EXPECT_EQ(s.accelerators[1].engine.kv_capacity_tokens, 1200000);
  EXPECT_EQ(s.accelerators[1].engine.max_num_seqs, 512);
  ASSERT_EQ(s.zones.size(), 2U);
  EXPECT_EQ(s.zones[0].GramsPerKwhAt(12345), 30);
  EXPECT_EQ(s.zones[1].GramsPerKwhAt(0), 200);
  EXPECT_EQ(s.zones[1].GramsPerKwhAt(7.5 * 3600), 300);
  EXPECT_EQ(s.zones[1].GramsPerKwhAt(86'400 + 18.2 * 3600), 350);  // the next day, 18:12
  ASSERT_EQ(s.fleet.size(), 2U);
  EXPECT_TRUE(s.fleet[0].scale_target);
  EXPECT_EQ(s.fleet[1].replicas, 2);
  EXPECT_EQ(s.cold_start_seconds, 45);
  EXPECT_EQ(s.slo.ttft_seconds, 1.5);
  EXPECT_EQ(s.slo.tpot_seconds, 0.1);
}

TEST(ReadScenario, PoliciesAreTheBasePoolPatchedAndParsedByTheApi) {
  const Scenario s = ReadScenario(Doc(kScenario), "/scenarios");
  ASSERT_EQ(s.policies.size(), 2U);
  const api::InferencePool& joules = s.policies[0].pool;
  const api::InferencePool& rr = s.policies[1].pool;
  EXPECT_EQ(s.policies[0].name, "joules");
  EXPECT_EQ(joules.spec.routing.strategy, Strategy::kJouleWeighted);
  EXPECT_EQ(rr.spec.routing.strategy, Strategy::kRoundRobin);
  // The base pool's autoscaling stays in both, with the CRD's defaults for the rest.
  EXPECT_EQ(rr.spec.autoscaling.max_replicas, 8);
  EXPECT_EQ(rr.spec.autoscaling.target_ongoing_requests,
            joules.spec.autoscaling.target_ongoing_requests);
  // What the simulated cluster fixes.
  EXPECT_EQ(joules.spec.selector.ToString(), "app=sim");
  EXPECT_EQ(joules.spec.target_port, 8000);
  ASSERT_TRUE(joules.spec.scale_target_ref.has_value());
  EXPECT_EQ(joules.spec.scale_target_ref->name, "h100");
  EXPECT_EQ(joules.spec.scale_target_ref->kind, "Deployment");
}

TEST(ReadScenario, WithoutPoliciesThePoolAloneRuns) {
  json doc = Doc(kScenario);
  doc.erase("policies");
  const Scenario s = ReadScenario(doc, "/scenarios");
  ASSERT_EQ(s.policies.size(), 1U);
  EXPECT_EQ(s.policies[0].name, "base");
}

TEST(ReadScenario, EveryProblemIsNamedByItsField) {
  json doc = Doc(kScenario);
  doc["trace"]["rateScale"] = -1;
  doc["trace"]["speedup"] = 2;
  doc["accelerators"][1].erase("kvCacheTokens");
  doc["zones"][0]["hourlyGramsPerKwh"] = json::array({1, 2});
  doc["fleet"][1]["zone"] = "mars";
  doc["fleet"][1]["scaleTarget"] = true;
  doc["fleet"].push_back(
      {{"name", "h100"}, {"accelerator", "NVIDIA-B200"}, {"zone", "eu-north-1"}});
  doc["slo"]["ttftSeconds"] = 0;
  const std::string error = ErrorOf(doc);
  EXPECT_THAT(error, HasSubstr("trace.rateScale: must be"));
  EXPECT_THAT(error, HasSubstr("trace.speedup: is not a field of this object"));
  EXPECT_THAT(error, HasSubstr("accelerators[1].kvCacheTokens: "));
  EXPECT_THAT(error, HasSubstr("zones[0].gramsPerKwh: give exactly one of gramsPerKwh and "
                               "hourlyGramsPerKwh"));
  EXPECT_THAT(error, HasSubstr("fleet[1].zone: names no zone: \"mars\""));
  EXPECT_THAT(error,
              HasSubstr("fleet[1].scaleTarget: at most one group is the pool's scale target"));
  EXPECT_THAT(error, HasSubstr("fleet[2].name: repeats \"h100\": names must be unique"));
  EXPECT_THAT(error, HasSubstr("slo.ttftSeconds: must be greater than 0"));
}

TEST(ReadScenario, ABadPoolIsReportedInTheScenariosTerms) {
  json doc = Doc(kScenario);
  doc["policies"][1]["pool"]["routing"]["strategy"] = "Fastest";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("policies[1].pool.routing.strategy: must be one of"));
  doc = Doc(kScenario);
  doc["pool"]["autoscaling"]["minReplicas"] = 9;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("policies[0].pool.autoscaling.minReplicas: must be at most "
                                      "maxReplicas (8), got 9"));
  doc = Doc(kScenario);
  doc["policies"][1]["name"] = "joules";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("policies[1].name: repeats \"joules\""));
}

TEST(ReadScenario, APolicyMayBeAPeersRouterNamedByItsKind) {
  json doc = Doc(kScenario);
  doc["policies"][1] = {{"name", "envoy"}, {"baseline", {{"kind", "power-of-two"}}}};
  // The paths are absolute or relative to a folder that need not exist: nothing is read here.
  const Scenario s = ReadScenario(doc, "/nowhere");
  ASSERT_EQ(s.policies.size(), 2U);
  EXPECT_FALSE(s.policies[0].baseline);
  ASSERT_TRUE(s.policies[1].baseline);
  EXPECT_EQ(s.policies[1].baseline->kind, BaselineKind::kPowerOfTwo);
  doc["policies"][1]["baseline"] = {{"kind", "p2c"}, {"choices", 3}};
  const std::string error = ErrorOf(doc);
  EXPECT_THAT(error, HasSubstr("policies[1].baseline.kind: must be one of random, round-robin, "
                               "least-outstanding, power-of-two, sglang-cache-aware, "
                               "llm-d-scorer, got \"p2c\""));
  EXPECT_THAT(error, HasSubstr("policies[1].baseline.choices: is not a field of this object"));
  // Each peer's parameters go by its own names.
  doc["policies"][1]["baseline"] = {
      {"kind", "llm-d-scorer"}, {"prefixCacheWeight", 5}, {"metricsRefreshSeconds", 1}};
  const Scenario llmd = ReadScenario(doc, "/nowhere");
  ASSERT_TRUE(llmd.policies[1].baseline);
  EXPECT_EQ(llmd.policies[1].baseline->kind, BaselineKind::kLlmdScorer);
  EXPECT_EQ(llmd.policies[1].baseline->scorer.prefix_cache_weight, 5);
  EXPECT_EQ(llmd.policies[1].baseline->scorer.queue_weight, 2);  // the default kept
  EXPECT_EQ(llmd.policies[1].baseline->scorer.metrics_refresh_seconds, 1);
  doc["policies"][1]["baseline"]["queueWeight"] = -1;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("policies[1].baseline.queueWeight:"));
}

TEST(ReadScenario, RequiredPartsAndWrongShapes) {
  EXPECT_THAT(ErrorOf(json::array()), HasSubstr("the scenario must be a YAML mapping"));
  const std::string error = ErrorOf(json::object());
  EXPECT_THAT(error, HasSubstr("trace: required"));
  EXPECT_THAT(error, HasSubstr("profiles: required"));
  EXPECT_THAT(error, HasSubstr("fleet: required"));
}

TEST(LoadScenario, NamesTheFile) {
  try {
    (void)LoadScenario("/nonexistent/scenario.yaml");
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/scenario.yaml: "));
  }
}

}  // namespace
}  // namespace eoc::sim
