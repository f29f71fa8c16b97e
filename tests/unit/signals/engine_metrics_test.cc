#include "signals/engine_metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "sim/metrics_pages.h"

namespace eoc::signals {
namespace {

using testing::Fixture;

// The figures `map` reads from `text`, parsed keeping only the map's families.
std::vector<ModelFigures> Read(const EngineMap& map, const std::string& text) {
  const ParseResult parsed = ParseExposition(text, {.keep = map.Filter()});
  EXPECT_TRUE(parsed.ok()) << parsed.error().ToString();
  for (const Family& family : parsed.page().families) {
    EXPECT_TRUE(map.Filter()(family.name)) << family.name;
  }
  return map.Read(parsed.page());
}

ModelFigures One(const EngineMap& map, const std::string& text) {
  std::vector<ModelFigures> models = Read(map, text);
  EXPECT_EQ(models.size(), 1U);
  return models.empty() ? ModelFigures{} : models[0];
}

TEST(EngineMap, VllmV0FullPage) {
  // vllm-v0.5-opt125m-full.prom: the older gpu_cache_usage_perc, and cache_config_info without a
  // model_name (pod-wide).
  const ModelFigures m = One(EngineMap::Vllm(), Fixture("vllm-v0.5-opt125m-full.prom"));
  EXPECT_EQ(m.model, "facebook/opt-125m");
  EXPECT_EQ(m.running, 0);
  EXPECT_EQ(m.waiting, 0);
  EXPECT_EQ(m.kv_cache_usage, 0);
  EXPECT_EQ(m.block_size, 16);
  EXPECT_EQ(m.num_gpu_blocks, 7281);
  EXPECT_EQ(m.prompt_tokens_total, 5);
  EXPECT_EQ(m.generation_tokens_total, 7);
  EXPECT_EQ(m.prefix_cache_queries_total, std::nullopt);  // V0 has no prefix-cache counters
  EXPECT_EQ(m.prefix_cache_hit_rate, std::nullopt);
}

TEST(EngineMap, VllmV1NewNamesOverDeprecatedOnes) {
  // vllm-v1-0.10-glm45-excerpt.prom: kv_cache_usage_perc, prefix_cache_queries_total (new) and
  // gpu_prefix_cache_hits_total (deprecated; the new hits are in the excerpt's gap).
  const ModelFigures m = One(EngineMap::Vllm(), Fixture("vllm-v1-0.10-glm45-excerpt.prom"));
  EXPECT_EQ(m.model, "zai-org/GLM-4.5");
  EXPECT_DOUBLE_EQ(*m.kv_cache_usage, 9.75010481363281e-06);
  EXPECT_EQ(m.prefix_cache_queries_total, 32);
  EXPECT_EQ(m.prefix_cache_hits_total, 0);
  EXPECT_EQ(m.running, std::nullopt);
  EXPECT_EQ(m.block_size, std::nullopt);

  const ModelFigures both = One(EngineMap::Vllm(),
                                "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.9\n"
                                "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n"
                                "vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 7\n"
                                "vllm:prefix_cache_hits_total{model_name=\"m\"} 3\n");
  EXPECT_EQ(both.kv_cache_usage, 0.25);
  EXPECT_EQ(both.prefix_cache_hits_total, 3);
}

TEST(EngineMap, VllmV1SampledPage) {
  const ModelFigures m = One(EngineMap::Vllm(), Fixture("vllm-v1-qwen3-sampled-excerpt.prom"));
  EXPECT_EQ(m.model, "Qwen/Qwen3-0.6B");
  EXPECT_EQ(m.running, 0);
  EXPECT_EQ(m.waiting, 0);
  EXPECT_EQ(m.prompt_tokens_total, 80);
  EXPECT_EQ(m.generation_tokens_total, 500);
  EXPECT_EQ(m.prefix_cache_queries_total, 80);
}

TEST(EngineMap, VllmEnginesAddUpAndUsageIsWeightedByBlocks) {
  const std::string page =
      "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"1000\"} 1\n"
      "vllm:cache_config_info{block_size=\"16\",engine=\"1\",num_gpu_blocks=\"3000\"} 1\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 4\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 6\n"
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.8\n"
      "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.4\n"
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 100\n"
      "vllm:prompt_tokens_total{engine=\"1\",model_name=\"m\"} 50\n";
  const ModelFigures m = One(EngineMap::Vllm(), page);
  EXPECT_EQ(m.running, 10);
  EXPECT_EQ(m.num_gpu_blocks, 4000);
  EXPECT_EQ(m.block_size, 16);
  EXPECT_DOUBLE_EQ(*m.kv_cache_usage, (0.8 * 1000 + 0.4 * 3000) / 4000);
  EXPECT_EQ(m.prompt_tokens_total, 150);
  // Without the blocks of each engine, the mean.
  const ModelFigures mean = One(EngineMap::Vllm(),
                                "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.8\n"
                                "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.4\n");
  EXPECT_DOUBLE_EQ(*mean.kv_cache_usage, 0.6);
}

TEST(EngineMap, VllmModelsAndLoraAdaptersApart) {
  const std::vector<ModelFigures> models =
      Read(EngineMap::Vllm(),
           "vllm:cache_config_info{block_size=\"32\",num_gpu_blocks=\"500\"} 1\n"
           "vllm:num_requests_running{model_name=\"base\"} 2\n"
           "vllm:num_requests_running{model_name=\"sql-lora\"} 1\n"
           "vllm:num_requests_waiting{model_name=\"base\"} 3\n");
  ASSERT_EQ(models.size(), 2U);
  EXPECT_EQ(models[0].model, "base");
  EXPECT_EQ(models[0].running, 2);
  EXPECT_EQ(models[0].waiting, 3);
  EXPECT_EQ(models[1].model, "sql-lora");
  EXPECT_EQ(models[1].waiting, std::nullopt);
  EXPECT_EQ(models[1].num_gpu_blocks, 500);  // the pod's blocks, shared
  EXPECT_EQ(models[1].block_size, 32);
}

TEST(EngineMap, VllmPagesWithoutTheSeriesGiveNothing) {
  EXPECT_TRUE(Read(EngineMap::Vllm(), Fixture("vllm-v1-dp-engine1-excerpt.prom")).empty());
  EXPECT_TRUE(Read(EngineMap::Vllm(), Fixture("vllm-v0-lora-multimodel-excerpt.prom")).empty());
  EXPECT_TRUE(Read(EngineMap::Vllm(), Fixture("dcgm-kops-l4-full.prom")).empty());
}

TEST(EngineMap, SglangDocsPage) {
  const ModelFigures m = One(EngineMap::Sglang(), Fixture("sglang-llama31-8b-docs-full.prom"));
  EXPECT_EQ(m.model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(m.running, 162);
  EXPECT_EQ(m.waiting, 2826);
  EXPECT_EQ(m.kv_cache_usage, 0.28);
  EXPECT_EQ(m.prompt_tokens_total, 8.128902e+06);
  EXPECT_EQ(m.generation_tokens_total, 7.557572e+06);
  EXPECT_DOUBLE_EQ(*m.prefix_cache_hit_rate, 0.007507552643049313);
  EXPECT_EQ(m.block_size, std::nullopt);
}

TEST(EngineMap, SglangRankedAndDisaggregatedPages) {
  const ModelFigures ranked =
      One(EngineMap::Sglang(), Fixture("sglang-v0.5.1-qwen32b-excerpt.prom"));
  EXPECT_EQ(ranked.model, "Qwen-32B");
  EXPECT_EQ(ranked.running, 1);
  EXPECT_EQ(ranked.kv_cache_usage, 0);
  const ModelFigures pd = One(EngineMap::Sglang(), Fixture("sglang-pd-deepseek-r1-excerpt.prom"));
  EXPECT_EQ(pd.prefix_cache_hits_total, 2688);  // cached_tokens_total
  EXPECT_EQ(pd.running, 0);
  // The dp8 excerpt has none of the series read.
  EXPECT_TRUE(Read(EngineMap::Sglang(), Fixture("sglang-dp8-deepseek-r1-excerpt.prom")).empty());
}

TEST(EngineMap, SglangDpRanksAddUpTensorRanksDoNot) {
  const std::string page =
      "sglang:num_running_reqs{dp_rank=\"0\",model_name=\"m\",pp_rank=\"0\",tp_rank=\"0\"} 5\n"
      "sglang:num_running_reqs{dp_rank=\"0\",model_name=\"m\",pp_rank=\"0\",tp_rank=\"1\"} 5\n"
      "sglang:num_running_reqs{dp_rank=\"1\",model_name=\"m\",pp_rank=\"0\",tp_rank=\"2\"} 7\n"
      "sglang:num_running_reqs{dp_rank=\"1\",model_name=\"m\",pp_rank=\"0\",tp_rank=\"3\"} 6\n"
      "sglang:token_usage{dp_rank=\"0\",model_name=\"m\",tp_rank=\"0\"} 0.2\n"
      "sglang:token_usage{dp_rank=\"1\",model_name=\"m\",tp_rank=\"2\"} 0.6\n"
      "sglang:page_size{model_name=\"m\"} 64\n"
      "sglang:max_total_num_tokens{dp_rank=\"0\",model_name=\"m\"} 6400\n"
      "sglang:max_total_num_tokens{dp_rank=\"1\",model_name=\"m\"} 6400\n";
  const ModelFigures m = One(EngineMap::Sglang(), page);
  EXPECT_EQ(m.running, 12);  // dp 0: 5 (tp ranks agree), dp 1: 7 (the larger)
  EXPECT_DOUBLE_EQ(*m.kv_cache_usage, 0.4);
  EXPECT_EQ(m.block_size, 64);
  EXPECT_EQ(m.num_gpu_blocks, 200);  // 12,800 tokens / 64
}

TEST(EngineMap, TritonTrtllmPage) {
  // trtllm-triton-backend-readme-excerpt.prom: no "waiting" nor "fraction" (older backend).
  const ModelFigures m =
      One(EngineMap::Trtllm(), Fixture("trtllm-triton-backend-readme-excerpt.prom"));
  EXPECT_EQ(m.model, "tensorrt_llm");
  EXPECT_EQ(m.running, 1);  // scheduled
  EXPECT_EQ(m.waiting, 0);  // active 0 - scheduled 1, not below 0
  EXPECT_EQ(m.block_size, 64);
  EXPECT_EQ(m.num_gpu_blocks, 6239);
  EXPECT_DOUBLE_EQ(*m.kv_cache_usage, 1.0 / 6239);
  EXPECT_EQ(m.prompt_tokens_total, std::nullopt);
}

TEST(EngineMap, TrtllmServePages) {
  // The excerpts hold latency histograms only: nothing read, nothing made up.
  EXPECT_TRUE(Read(EngineMap::Trtllm(), Fixture("trtllm-serve-pr5785-excerpt.prom")).empty());
  EXPECT_TRUE(Read(EngineMap::Trtllm(), Fixture("trtllm-serve-aibrix2004-excerpt.prom")).empty());
  const ModelFigures m = One(EngineMap::Trtllm(),
                             "num_requests_running{engine_type=\"undefined\",model_name=\"q\"} 3\n"
                             "trtllm_num_requests_waiting{model_name=\"q\"} 2\n"
                             "kv_cache_utilization{model_name=\"q\"} 0.5\n"
                             "kv_cache_tokens_per_block{model_name=\"q\"} 32\n"
                             "prompt_tokens_total{model_name=\"q\"} 10\n");
  EXPECT_EQ(m.model, "q");
  EXPECT_EQ(m.running, 3);
  EXPECT_EQ(m.waiting, 2);
  EXPECT_EQ(m.kv_cache_usage, 0.5);
  EXPECT_EQ(m.block_size, 32);
  EXPECT_EQ(m.prompt_tokens_total, 10);
}

TEST(EngineMap, GenericNames) {
  const EngineMap map = EngineMap::Generic(
      {.running = "my_running", .kv_cache_usage = "my_kv", .model_label = "model"});
  EXPECT_EQ(map.families(), (std::vector<std::string>{"my_kv", "my_running"}));
  const ModelFigures m = One(map, "my_running{model=\"x\"} 4\nmy_kv{model=\"x\"} 1.5\nother 1\n");
  EXPECT_EQ(m.model, "x");
  EXPECT_EQ(m.running, 4);
  EXPECT_EQ(m.kv_cache_usage, 1);  // clamped
  EXPECT_EQ(m.waiting, std::nullopt);
}

TEST(EngineMap, NotFiniteValuesAreAbsent) {
  const ModelFigures m = One(EngineMap::Vllm(),
                             "vllm:num_requests_running{model_name=\"m\"} NaN\n"
                             "vllm:num_requests_waiting{model_name=\"m\"} 1\n");
  EXPECT_EQ(m.running, std::nullopt);
  EXPECT_EQ(m.waiting, 1);
}

// The fake worker's pages (sim/metrics_pages.h) read back as what they were made of.
TEST(EngineMap, FakeWorkerPagesAgreeWithTheMaps) {
  const eoc::sim::PageFigures load{.running = 3,
                                   .waiting = 2,
                                   .kv_cache_usage = 0.25,
                                   .num_gpu_blocks = 4096,
                                   .block_size = 32,
                                   .prompt_tokens_total = 1200,
                                   .generation_tokens_total = 800};
  const eoc::sim::MetricsLabels labels{.model = "llama", .pod_name = "p", .pod_namespace = "n"};
  struct Engine {
    eoc::api::Engine fake;
    EngineMap map;
    std::string model;
  };
  const std::vector<Engine> engines = {
      {eoc::api::Engine::kVllm, EngineMap::Vllm(), "llama"},
      {eoc::api::Engine::kSglang, EngineMap::Sglang(), "llama"},
      {eoc::api::Engine::kTrtllm, EngineMap::Trtllm(), "tensorrt_llm"},
  };
  for (const Engine& engine : engines) {
    SCOPED_TRACE(std::string(eoc::api::ToString(engine.fake)));
    const ModelFigures m =
        One(engine.map, eoc::sim::RenderMetrics(engine.fake, load, labels, /*dcgm=*/true, 4));
    EXPECT_EQ(m.model, engine.model);
    EXPECT_EQ(m.running, 3);
    EXPECT_EQ(m.waiting, 2);
    EXPECT_DOUBLE_EQ(m.kv_cache_usage.value_or(-1), 0.25);
    EXPECT_EQ(m.block_size, 32);
    EXPECT_EQ(m.num_gpu_blocks, 4096);
    EXPECT_EQ(m.prompt_tokens_total, 1200);
    EXPECT_EQ(m.generation_tokens_total, 800);
  }
}

}  // namespace
}  // namespace eoc::signals
