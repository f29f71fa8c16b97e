// The engines' metric maps: from a parsed /metrics page (exposition.h) to the figures of each
// model a worker serves: running and waiting requests, KV-cache use, KV block geometry, token
// and prefix-cache counters. Each map names the families the parser is to keep. Pure.
//
//   const EngineMap map = EngineMap::Vllm();
//   ParseResult parsed = ParseExposition(text, {.keep = map.Filter()});
//   for (const ModelFigures& m : map.Read(parsed.page())) {
//     m.model              // "meta-llama/Llama-3.1-8B" (the model_name label; "" when none)
//     m.running            // std::optional<double>: absent when the page lacks it
//   }
//
// Series read (README.md, "src/signals", has the table):
//   vLLM    vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc (else
//           the older vllm:gpu_cache_usage_perc), vllm:cache_config_info{block_size,
//           num_gpu_blocks}, vllm:prompt_tokens_total, vllm:generation_tokens_total,
//           vllm:prefix_cache_queries_total/_hits_total (else vllm:gpu_prefix_cache_...).
//   SGLang  sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage,
//           sglang:prompt_tokens_total, sglang:generation_tokens_total, sglang:cache_hit_rate,
//           sglang:cached_tokens_total (prefix hits; queries are then the prompt tokens),
//           sglang:page_size, sglang:num_pages (else sglang:max_total_num_tokens / page_size).
//   TRT-LLM Triton's nv_trt_llm_request_metrics{request_type=scheduled|waiting|active} (waiting
//           is active - scheduled where the page has no "waiting"),
//           nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction|used|max|tokens_per}
//           (use is used / max where there is no "fraction"), the _sum of the histograms
//           nv_llm_input_token_len and nv_llm_output_token_len; and trtllm-serve's own names,
//           bare or prefixed trtllm_: num_requests_running, num_requests_waiting,
//           kv_cache_utilization, kv_cache_hit_rate, kv_cache_max_blocks,
//           kv_cache_tokens_per_block, prompt_tokens_total, generation_tokens_total.
//   generic the caller's names (GenericMetricNames).
// How series combine into one model's figure:
// - A model is the model_name label (Triton: model); series without it (vLLM's
//   cache_config_info) are pod-wide and fill in every model's figures that lack them.
// - Engines (vLLM's `engine`) and SGLang's data-parallel ranks (`dp_rank`) are separate
//   schedulers with their own requests and KV pools: counts, counters and blocks add up over
//   them; the block size is their largest.
// - SGLang's tensor- and pipeline-parallel ranks (`tp_rank`, `pp_rank`) within one dp rank
//   serve the same requests: the largest of their values is taken, never their sum. So are
//   series that differ only in labels not named here.
// - KV-cache use of several engines is their use weighted by their blocks when every engine's
//   blocks are known, else their mean (likewise prefix_cache_hit_rate).
// - A value that is NaN or infinite is absent; KV-cache use is clamped to 0..1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signals/exposition.h"

namespace eoc::signals {

// One model's figures on one worker's page; each absent when the page has no series for it.
struct ModelFigures {
  std::string model;
  std::optional<double> running;
  std::optional<double> waiting;
  std::optional<double> kv_cache_usage;        // 0..1
  std::optional<std::int64_t> block_size;      // tokens per KV block (SGLang: page size)
  std::optional<std::int64_t> num_gpu_blocks;  // KV blocks on the GPU(s)
  std::optional<double> prompt_tokens_total;   // counters, totals since the engine started
  std::optional<double> generation_tokens_total;
  std::optional<double> prefix_cache_queries_total;  // tokens looked up in the prefix cache
  std::optional<double> prefix_cache_hits_total;     // tokens found there
  std::optional<double> prefix_cache_hit_rate;       // 0..1, where the engine has a gauge only
};

// The series of an engine the maps do not know; an empty name is a figure not read.
struct GenericMetricNames {
  std::string running;
  std::string waiting;
  std::string kv_cache_usage;
  std::string prompt_tokens;
  std::string generation_tokens;
  std::string model_label = "model_name";

  bool operator==(const GenericMetricNames&) const = default;
};

class EngineMap {
 public:
  static EngineMap Vllm();
  static EngineMap Sglang();
  static EngineMap Trtllm();
  static EngineMap Generic(const GenericMetricNames& names);

  // The families this map reads, for ParseOptions::keep.
  const std::vector<std::string>& families() const { return families_; }
  FamilyFilter Filter() const { return KeepFamilies(families_); }

  // The figures of each model on the page, by model name; empty when the page has none of the
  // series read.
  std::vector<ModelFigures> Read(const Page& page) const;

  // What a series gives, and how its samples combine.
  enum class Figure : std::uint8_t {
    kRunning,
    kWaiting,
    kKvCacheUsage,
    kBlockSize,
    kGpuBlocks,
    kPromptTokens,
    kGenerationTokens,
    kPrefixQueries,
    kPrefixHits,
    kPrefixHitRate,
    kActive,      // Triton: running plus waiting
    kUsedBlocks,  // Triton, trtllm-serve: KV blocks in use
    kMaxTokens,   // SGLang: KV pool size in tokens
    kCount
  };
  // One series read: samples named `series` (of `family`, where the page types it a histogram)
  // whose label `select_label` has `select_value` (when set) give `figure`: their value, or that
  // of their label `value_label` (info gauges). For one figure, the rule of the lowest
  // `preference` that has samples wins (a new name over an old one).
  struct Rule {
    std::string series;
    std::string family;
    Figure figure = Figure::kRunning;
    int preference = 0;
    std::string_view select_label;
    std::string_view select_value;
    std::string_view value_label;
  };

 private:
  EngineMap(std::vector<Rule> rules, std::vector<std::string> model_labels,
            bool queries_are_prompt_tokens = false);

  std::vector<Rule> rules_;
  std::vector<std::string> model_labels_;  // the first a series has names its model
  std::vector<std::string> families_;
  bool queries_are_prompt_tokens_ = false;  // SGLang: prefix hits are cached prompt tokens
};

}  // namespace eoc::signals
