// bench_signals: what parsing a worker's /metrics page costs, keeping only the engine map's
// families (what the scraper does) against keeping every family. Google Benchmark; needs no
// cluster.
//   bench_signals [--benchmark_filter=REGEX] [other --benchmark_* flags]
//   bench/run signals     # every benchmark, figures appended to bench/results/signals.md
// Pages:
//   vllm_full      vllm-v0.5-opt125m-full.prom (tests/unit/signals/fixtures/), a real vLLM V0
//                  page: 12.9 KB, 120 samples, 29 families (python_gc_*, process_*, vllm:*).
//   synthetic_1000 a made-up page of 1,000 series: 100 vLLM-shaped families of 10 series each
//                  (labels engine, model_name, and a third), the engine map's own families among
//                  them.
// Each page is parsed with ParseExposition; "engine" keeps EngineMap::Vllm()'s families and reads
// the figures (EngineMap::Read), "all" keeps every family. Counters: bytes_per_second (of page),
// samples_per_second and ns_per_sample over all the page's samples, kept or not.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "signals/engine_metrics.h"
#include "signals/exposition.h"

namespace {

using eoc::signals::EngineMap;
using eoc::signals::ParseExposition;
using eoc::signals::ParseOptions;
using eoc::signals::ParseResult;

std::string VllmFullPage() {
  std::ifstream in(std::string(EOC_SIGNALS_FIXTURES_DIR) + "/vllm-v0.5-opt125m-full.prom");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// 100 families of 10 series, each family with HELP and TYPE; the first few are the engine map's.
std::string SyntheticPage() {
  const char* const engine_families[] = {"vllm:num_requests_running", "vllm:num_requests_waiting",
                                         "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_total",
                                         "vllm:generation_tokens_total"};
  std::string page;
  for (int f = 0; f < 100; ++f) {
    const std::string name =
        f < 5 ? engine_families[f] : "vllm:synthetic_family_" + std::to_string(f) + "_total";
    page += "# HELP " + name + " A synthetic family for the benchmark.\n";
    page += "# TYPE " + name + " gauge\n";
    for (int s = 0; s < 10; ++s) {
      page += name + R"({engine=")" + std::to_string(s % 2) +
              R"(",model_name="meta-llama/Llama-3.1-8B-Instruct",shard=")" + std::to_string(s) +
              R"("} )" + std::to_string(f * 10 + s) + ".5\n";
    }
  }
  return page;
}

const std::string& Page(int which) {
  static const std::string vllm = VllmFullPage();
  static const std::string synthetic = SyntheticPage();
  return which == 0 ? vllm : synthetic;
}

void BM_Parse(benchmark::State& state) {
  const std::string& page = Page(static_cast<int>(state.range(0)));
  const bool engine_only = state.range(1) == 1;
  const EngineMap map = EngineMap::Vllm();
  const ParseOptions options{.keep = engine_only ? map.Filter() : nullptr};
  const std::size_t samples = ParseExposition(page).page().SampleCount();
  std::size_t kept = 0;
  for ([[maybe_unused]] auto _ : state) {
    ParseResult result = ParseExposition(page, options);
    if (!result.ok()) {
      state.SkipWithError(result.error().ToString().c_str());
      return;
    }
    kept = result.page().SampleCount();
    if (engine_only) benchmark::DoNotOptimize(map.Read(result.page()));
    benchmark::DoNotOptimize(result);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * page.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * samples));
  state.counters["page_bytes"] = static_cast<double>(page.size());
  state.counters["samples"] = static_cast<double>(samples);
  state.counters["kept"] = static_cast<double>(kept);
  state.counters["ns_per_sample"] = benchmark::Counter(
      static_cast<double>(samples) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetLabel(std::string(state.range(0) == 0 ? "vllm_full" : "synthetic_1000") + "/" +
                 (engine_only ? "engine" : "all"));
}
BENCHMARK(BM_Parse)->ArgNames({"page", "engine_only"})->ArgsProduct({{0, 1}, {1, 0}});

}  // namespace

BENCHMARK_MAIN();
