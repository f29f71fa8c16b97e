// eoc-sim: replays a trace against a simulated fleet under each policy of a scenario, with the
// controller's routing, signals and autoscaling code, and compares them.
//
//   eoc-sim examples/sim/two-class.yaml                      # the table on stdout
//   eoc-sim scenario.yaml --trace my-trace.csv --json out.json --plots out/
//   eoc-sim scenario.yaml --policy joules --autoscaler-record ticks.csv
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "controller/pool_scaler.h"
#include "sim/autoscaler_record.h"
#include "sim/plots.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace {

struct Flags {
  std::string scenario;
  std::string trace;
  std::optional<std::uint64_t> seed;
  std::optional<double> duration_seconds;
  std::optional<double> rate_scale;
  std::vector<std::string> policies;
  std::string json;
  std::string plots;
  std::string autoscaler_record;
  bool quiet = false;
};

// The autoscaler's ticks as its conformance record (sim/autoscaler_record.h), with the
// `complete` column, and the policy's parameters beside it in PATH.json.
void WriteRecord(const std::string& path, const std::vector<eoc::sim::AutoscalerTick>& ticks,
                 const eoc::api::AutoscalingSpec& autoscaling) {
  std::ofstream csv(path);
  csv << eoc::sim::RecordCsv(ticks, /*complete_column=*/true);
  std::ofstream params(path + ".json");
  params << nlohmann::json{{"autoscaling",
                            eoc::sim::PolicyJson(eoc::controller::PolicyOf(autoscaling))}}
                .dump(2)
         << "\n";
  if (!csv || !params) throw std::runtime_error("cannot write " + path);
}

int Main(const Flags& f) {
  eoc::sim::Scenario scenario = eoc::sim::LoadScenario(f.scenario);
  if (!f.trace.empty()) scenario.trace_path = f.trace;
  if (f.seed) scenario.seed = *f.seed;
  if (f.duration_seconds) scenario.trace.duration_seconds = *f.duration_seconds;
  if (f.rate_scale) scenario.trace.rate_scale = *f.rate_scale;
  scenario.trace.seed = scenario.seed;
  const eoc::sim::Trace trace = eoc::sim::ReadTraceFile(scenario.trace_path, scenario.trace);
  const std::vector<eoc::sim::PowerProfile> profiles = eoc::sim::LoadProfiles(scenario);
  std::vector<eoc::sim::RunReport> reports;
  for (const eoc::sim::Policy& policy : scenario.policies) {
    if (!f.policies.empty() &&
        std::find(f.policies.begin(), f.policies.end(), policy.name) == f.policies.end()) {
      continue;
    }
    std::vector<eoc::sim::AutoscalerTick> ticks;
    eoc::sim::SimulateOptions options{.ticks = f.autoscaler_record.empty() ? nullptr : &ticks};
    const auto start = std::chrono::steady_clock::now();
    if (!f.quiet && isatty(fileno(stderr)) != 0) {  // a line rewritten in place: terminals only
      options.progress = [&](double now, double last) {
        std::fprintf(stderr, "\reoc-sim: %s: %.0f of %.0f simulated seconds", policy.name.c_str(),
                     now, last);
      };
    }
    reports.push_back(eoc::sim::Simulate(scenario, trace, profiles, policy, options));
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!f.quiet) {
      std::fprintf(stderr, "\reoc-sim: %s: %zu requests, %.0f simulated seconds in %.2f s\n",
                   policy.name.c_str(), trace.requests.size(), reports.back().simulated_seconds,
                   wall);
    }
    if (!f.autoscaler_record.empty()) {
      WriteRecord(f.autoscaler_record, ticks, policy.pool.spec.autoscaling);
    }
  }
  if (reports.empty()) throw std::runtime_error("no policy of the scenario has those names");
  std::cout << eoc::sim::ComparisonTable(reports);
  if (!f.json.empty()) {
    nlohmann::json out = {{"scenario", f.scenario},
                          {"trace", scenario.trace_path},
                          {"requests", trace.requests.size()},
                          {"seed", scenario.seed},
                          {"runs", nlohmann::json::array()}};
    for (const eoc::sim::RunReport& r : reports) out["runs"].push_back(eoc::sim::ToJson(r));
    std::ofstream file(f.json);
    file << out.dump() << "\n";
    if (!file) throw std::runtime_error("cannot write " + f.json);
  }
  if (!f.plots.empty()) {
    for (const std::string& png : eoc::sim::WritePlots(reports, f.plots)) {
      std::cerr << "eoc-sim: plotted " << png << "\n";
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "eoc-sim: replays a request trace against a simulated fleet, routed and scaled by "
      "the controller's own code, once per policy of the scenario"};
  Flags f;
  app.add_option("scenario", f.scenario, "the scenario file (YAML)")->required();
  app.add_option("--trace", f.trace, "replay this trace (Azure CSV or Mooncake JSONL) instead");
  app.add_option("--seed", f.seed, "the seed (default: the scenario's)");
  app.add_option("--duration-seconds", f.duration_seconds, "replay this much of the trace");
  app.add_option("--rate-scale", f.rate_scale, "scale the trace's request rate by this");
  app.add_option("--policy", f.policies, "run only the policies of these names (repeatable)");
  app.add_option("--json", f.json, "write every run's figures to this file");
  app.add_option("--plots", f.plots, "write the plots (PNG, with gnuplot) into this folder");
  app.add_option("--autoscaler-record", f.autoscaler_record,
                 "write the autoscaler's ticks (CSV, and its parameters in FILE.json) of the "
                 "last policy run");
  app.add_flag("--quiet", f.quiet, "no progress on standard error");
  CLI11_PARSE(app, argc, argv);
  try {
    return Main(f);
  } catch (const std::exception& e) {
    std::cerr << "\neoc-sim: " << e.what() << "\n";
    return 1;
  }
}
