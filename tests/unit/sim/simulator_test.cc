// The simulator end to end on cut-down real traces and the measured profiles: determinism, that
// every request is accounted for, energy and carbon that add up, the routing strategies acting
// as the controller's code makes them act, and the autoscaler scaling the target group up and,
// by draining, down. Assertions are on accounting and behaviour, never on speed.
#include "sim/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>

#include "common/yaml_json.h"
#include "shared_files.h"

namespace eoc::sim {
namespace {

using nlohmann::json;
using testing::NoSharedFile;
using testing::SharedFile;

// Two classes in two zones, as examples/sim/two-class.yaml has them; `extra` is appended (YAML).
std::string ScenarioYaml(const std::string& extra) {
  return R"(
seed: 3
trace:
  path: traces/azure-llm-2023-code.csv
  durationSeconds: 300
  sessions: {share: 0.6, meanTurns: 4}
profiles:
  mlenergy: energy-profiles/mlenergy.csv
  gpus: energy-profiles/gpus.csv
  version: v2.0
  task: chat (ShareGPT)
  model: meta-llama/Meta-Llama-3.1-8B-Instruct
accelerators:
  - {name: NVIDIA-A100-SXM4-40GB, gpu: A100-SXM4-40GB, idleWatts: 61.8, kvCacheTokens: 136000,
     prefillTokensPerSecond: 9700}
  - {name: NVIDIA-H100-80GB-HBM3, gpu: H100-80GB-HBM3, kvCacheTokens: 411000,
     prefillTokensPerSecond: 30800}
zones:
  - {name: clean, gramsPerKwh: 30}
  - {name: dirty, gramsPerKwh: 300}
slo: {ttftSeconds: 2, tpotSeconds: 0.1}
)" + extra;
}

class SimulatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (SharedFile("traces/azure-llm-2023-code.csv").empty()) {
      GTEST_SKIP() << NoSharedFile("traces/azure-llm-2023-code.csv");
    }
  }

  // The scenario, its trace and profiles, read as eoc-sim reads them.
  void Load(const std::string& extra) {
    std::string error;
    const std::optional<json> doc = ParseYaml(ScenarioYaml(extra), error);
    ASSERT_TRUE(doc) << error;
    scenario_ = ReadScenario(*doc, EOC_SHARED_DIR);
    trace_ = ReadTraceFile(scenario_.trace_path, scenario_.trace);
    profiles_ = LoadProfiles(scenario_);
  }

  RunReport Run(std::size_t policy, const SimulateOptions& options = {}) {
    return Simulate(scenario_, trace_, profiles_, scenario_.policies.at(policy), options);
  }

  Scenario scenario_;
  Trace trace_;
  std::vector<PowerProfile> profiles_;
};

// Two of each class, no autoscaling; a test appends its policies.
const std::string kTwoClassFleet = R"(
fleet:
  - {name: a100, accelerator: NVIDIA-A100-SXM4-40GB, zone: clean, replicas: 2}
  - {name: h100, accelerator: NVIDIA-H100-80GB-HBM3, zone: dirty, replicas: 2}
pool:
  carbon: {static: {clean: 30, dirty: 300}}
)";

const std::string kFixedFleet = kTwoClassFleet + R"(
policies:
  - {name: joules, pool: {routing: {strategy: JouleWeighted}}}
  - {name: carbon, pool: {routing: {strategy: CarbonWeighted}}}
  - {name: round-robin, pool: {routing: {strategy: RoundRobin}}}
)";

void ExpectAccounted(const RunReport& r, const Trace& trace) {
  EXPECT_EQ(r.requests, static_cast<std::int64_t>(trace.requests.size()));
  EXPECT_EQ(r.requests, r.finished + r.shed + r.timed_out);
  std::int64_t taken = 0;
  std::int64_t tokens = 0;
  double joules = 0;
  double grams = 0;
  for (const auto& [name, c] : r.classes) {
    taken += c.requests;
    tokens += c.output_tokens;
    joules += c.joules;
    grams += c.grams;
  }
  EXPECT_GE(taken, r.finished);  // a request is taken once, and finishes at most once
  EXPECT_EQ(tokens, r.output_tokens);
  EXPECT_NEAR(joules, r.joules, 1e-6 * r.joules);
  EXPECT_NEAR(grams, r.grams, 1e-6 * r.grams);
  EXPECT_EQ(r.ttft.count, static_cast<std::size_t>(r.finished));
  EXPECT_EQ(r.ttft_samples.size(), static_cast<std::size_t>(r.finished));
  std::int64_t reasons = 0;
  for (const auto& [reason, n] : r.pick_reasons) reasons += n;
  EXPECT_GE(reasons, r.finished);
  std::int64_t refusals = 0;
  for (const auto& [why, n] : r.refusals) refusals += n;
  EXPECT_EQ(refusals, r.shed);
}

TEST_F(SimulatorTest, TheSameSeedGivesTheSameReportByteForByte) {
  Load(kFixedFleet);
  const std::string first = ToJson(Run(0)).dump();
  const std::string second = ToJson(Run(0)).dump();
  EXPECT_EQ(first, second);
  // And another seed another run (the sessions and the picks' random draws change).
  scenario_.seed = 4;
  scenario_.trace.seed = 4;
  trace_ = ReadTraceFile(scenario_.trace_path, scenario_.trace);
  EXPECT_NE(ToJson(Run(0)).dump(), first);
}

TEST_F(SimulatorTest, EveryRequestFinishesOrIsCountedAndEnergyAddsUp) {
  Load(kFixedFleet);
  for (std::size_t p = 0; p < scenario_.policies.size(); ++p) {
    SCOPED_TRACE(scenario_.policies[p].name);
    const RunReport r = Run(p);
    ExpectAccounted(r, trace_);
    EXPECT_EQ(r.finished, r.requests);  // at the trace's own rate, four workers keep up
    // Idle power counts: four workers for the whole run draw at least their idle watts.
    const double idle_floor = r.simulated_seconds * (2 * 61.8 + 2 * 67.316);
    EXPECT_GT(r.joules, idle_floor * 0.999);
    EXPECT_GT(r.idle_joules, 0);
    EXPECT_LT(r.idle_joules, r.joules);
    // Grams are joules at their zones' intensities: between the cleanest and the dirtiest.
    EXPECT_GT(r.grams, r.joules / 3.6e6 * 30);
    EXPECT_LT(r.grams, r.joules / 3.6e6 * 300);
    EXPECT_DOUBLE_EQ(r.replica_seconds, 4 * r.simulated_seconds);
    EXPECT_EQ(r.scale_ups + r.scale_downs, 0);
    EXPECT_GT(r.prefix_hit_rate, 0);  // sessions' turns and shared prompts hit the caches
  }
}

TEST_F(SimulatorTest, CarbonWeightingSendsMoreToTheCleanZoneThanJouleWeighting) {
  Load(kFixedFleet);
  const RunReport joules = Run(0);
  const RunReport carbon = Run(1);
  const RunReport even = Run(2);
  const auto clean_share = [](const RunReport& r) {
    const double a100 = static_cast<double>(r.classes.at("NVIDIA-A100-SXM4-40GB").requests);
    const double h100 = static_cast<double>(r.classes.at("NVIDIA-H100-80GB-HBM3").requests);
    return a100 / (a100 + h100);
  };
  // The weights come from the controller's estimators and weight functions: the H100's grams
  // per token are ten times the A100's, so CarbonWeighted leans to the A100s harder.
  EXPECT_GT(clean_share(carbon), clean_share(joules));
  EXPECT_GT(clean_share(carbon), clean_share(even));
  EXPECT_LT(carbon.grams_per_token, even.grams_per_token);
  EXPECT_EQ(joules.strategy, "JouleWeighted");
  EXPECT_EQ(carbon.strategy, "CarbonWeighted");
}

TEST_F(SimulatorTest, AnOverloadedPoolShedsAndTimesOutButLosesNothing) {
  Load(R"(
fleet:
  - {name: a100, accelerator: NVIDIA-A100-SXM4-40GB, zone: clean, replicas: 1}
pool:
  routing: {admission: {maxQueue: 20, queueTimeoutSeconds: 5}}
policies:
  - {name: least-busy, pool: {routing: {strategy: LeastBusy}}}
)");
  scenario_.trace.rate_scale = 20;
  trace_ = ReadTraceFile(scenario_.trace_path, scenario_.trace);
  const RunReport r = Run(0);
  ExpectAccounted(r, trace_);
  EXPECT_GT(r.shed, 0);
  EXPECT_GT(r.refusals.count("queue-full"), 0U) << ToJson(r, false).dump();
  EXPECT_GT(r.finished, 0);
  EXPECT_LT(r.slo_attainment, 0.5);
}

TEST_F(SimulatorTest, TheAutoscalerScalesTheTargetUpUnderLoadAndDrainsItDownAfter) {
  Load(R"(
trace:
  path: traces/azure-llm-2023-code.csv
  durationSeconds: 600
  rateScale: 6
coldStartSeconds: 20
fleet:
  - {name: a100, accelerator: NVIDIA-A100-SXM4-40GB, zone: clean, replicas: 1,
     scaleTarget: true}
pool:
  autoscaling: {enabled: true, minReplicas: 1, maxReplicas: 6, targetOngoingRequests: 8,
                upscaleDelaySeconds: 5, downscaleDelaySeconds: 30, lookBackPeriodSeconds: 10,
                drainTimeoutSeconds: 60}
policies:
  - {name: least-busy, pool: {routing: {strategy: LeastBusy}}}
)");
  std::vector<AutoscalerTick> ticks;
  const RunReport r = Run(0, {.ticks = &ticks});
  ExpectAccounted(r, trace_);
  ASSERT_FALSE(ticks.empty());
  EXPECT_GT(r.scale_ups, 0);
  EXPECT_GT(r.scale_downs, 0);  // the trace ends; the pool drains back to its minimum
  ASSERT_FALSE(r.scale_events.empty());
  EXPECT_EQ(r.scale_events.front().from, 1);
  EXPECT_GT(r.scale_events.front().to, 1);
  EXPECT_LE(
      std::max_element(r.samples.begin(), r.samples.end(),
                       [](const Sample& a, const Sample& b) { return a.replicas < b.replicas; })
          ->replicas,
      6);
  // More pods than one for part of the run: replica-seconds above one pod's.
  EXPECT_GT(r.replica_seconds, r.simulated_seconds);
  // One class: weighing each worker by its capacity changes nothing.
  EXPECT_GT(r.load_imbalance, 1);
  EXPECT_NEAR(r.capacity_imbalance, r.load_imbalance, 1e-9);
  // Every decision is the policy's on the tick's input: the target a tick starts from is the
  // decision of the tick before.
  for (std::size_t i = 1; i < ticks.size(); ++i) {
    ASSERT_EQ(ticks[i].target, ticks[i - 1].decision) << "tick " << i;
  }
}

TEST_F(SimulatorTest, MooncakesHashIdsAreWholeBlocksOfTheEnginesPrefixCache) {
  if (SharedFile("traces/mooncake-synthetic.jsonl").empty()) {
    GTEST_SKIP() << NoSharedFile("traces/mooncake-synthetic.jsonl");
  }
  // One H100 whose cache never evicts: a turn finds its conversation's earlier blocks, 512
  // tokens each (the trace's block size, which the engine must take over from the trace).
  Load(R"(
fleet:
  - {name: h100, accelerator: NVIDIA-H100-80GB-HBM3, zone: clean, replicas: 1}
pool:
  routing: {prefixAffinity: {blockSizeTokens: 512}}
policies:
  - {name: least-busy, pool: {routing: {strategy: LeastBusy}}}
)");
  scenario_.accelerators[1].engine.kv_capacity_tokens = 20'000'000;
  scenario_.trace.duration_seconds = 600;
  scenario_.trace.sessions.share = 0;
  scenario_.trace.rate_scale = 0.2;
  trace_ = ReadTraceFile(SharedFile("traces/mooncake-synthetic.jsonl"), scenario_.trace);
  ASSERT_EQ(trace_.block_size_tokens, 512);
  const RunReport r = Run(0);
  ExpectAccounted(r, trace_);
  // 9% here (the first ten minutes, a fifth of the turns); counted in 16-token blocks, the hits
  // would be a thirty-second of that (0.3%).
  EXPECT_GT(r.prefix_hit_rate, 0.05);
  EXPECT_LT(r.prefix_hit_rate, 0.65);  // the whole trace's reuse, on one endless cache
}

TEST_F(SimulatorTest, ThePeersRoutersRunOnTheSameFleetAndAccountForEveryRequest) {
  Load(kTwoClassFleet + R"(
policies:
  - {name: random, baseline: {kind: random}}
  - {name: round-robin, baseline: {kind: round-robin}}
  - {name: least-outstanding, baseline: {kind: least-outstanding}}
  - {name: power-of-two, baseline: {kind: power-of-two}}
  - {name: sglang-cache-aware, baseline: {kind: sglang-cache-aware}}
)");
  scenario_.trace.rate_scale = 3;
  trace_ = ReadTraceFile(scenario_.trace_path, scenario_.trace);
  std::map<std::string, RunReport> runs;
  for (std::size_t p = 0; p < scenario_.policies.size(); ++p) {
    SCOPED_TRACE(scenario_.policies[p].name);
    const RunReport r = Run(p);
    ExpectAccounted(r, trace_);
    EXPECT_EQ(r.strategy, scenario_.policies[p].name);     // the kind, named as the file names it
    EXPECT_EQ(r.pick_reasons.at(r.strategy), r.requests);  // every request placed by it
    runs.emplace(r.policy, r);
  }
  // Round robin gives each of the four workers a quarter, whatever their speed.
  const auto& rr = runs.at("round-robin").classes;
  EXPECT_NEAR(static_cast<double>(rr.at("NVIDIA-A100-SXM4-40GB").requests),
              static_cast<double>(rr.at("NVIDIA-H100-80GB-HBM3").requests), 2);
  // Counting what is in flight sends more to the faster H100s, and evens the load out.
  const auto h100_share = [&](const std::string& name) {
    const auto& c = runs.at(name).classes;
    const double h100 = static_cast<double>(c.at("NVIDIA-H100-80GB-HBM3").requests);
    return h100 / (h100 + static_cast<double>(c.at("NVIDIA-A100-SXM4-40GB").requests));
  };
  EXPECT_GT(h100_share("least-outstanding"), 0.5);
  EXPECT_GT(h100_share("power-of-two"), 0.5);
  EXPECT_LT(runs.at("least-outstanding").load_imbalance, runs.at("random").load_imbalance);
  // Round robin keeps the A100s as busy by count as the H100s of three times their capacity: by
  // capacity, that is the more uneven.
  EXPECT_GT(runs.at("round-robin").capacity_imbalance, runs.at("round-robin").load_imbalance);
  for (const auto& [name, r] : runs) EXPECT_GE(r.capacity_imbalance, 1) << name;
}

}  // namespace
}  // namespace eoc::sim
