#include "signals/engine_metrics.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <map>
#include <utility>

#include "signals/exposition_tokens.h"

namespace eoc::signals {
namespace {

using Figure = EngineMap::Figure;
using Rule = EngineMap::Rule;

constexpr auto kFigureCount = static_cast<std::size_t>(Figure::kCount);

// A series whose family is its own name (a gauge or a counter).
Rule Series(const std::string& name, Figure figure, int preference = 0) {
  Rule rule{.series = name, .family = name, .figure = figure, .preference = preference};
  return rule;
}

// The samples of `name` whose label `label` is `value`.
Rule Selected(const std::string& name, std::string_view label, std::string_view value,
              Figure figure) {
  Rule rule = Series(name, figure);
  rule.select_label = label;
  rule.select_value = value;
  return rule;
}

// The _sum of the histogram `name`.
Rule HistogramSum(const std::string& name, Figure figure) {
  return Rule{.series = name + "_sum", .family = name, .figure = figure};
}

// One figure's samples of one model, by part (engine, dp rank): within a part, the largest.
struct Accumulator {
  int preference = INT_MAX;
  std::map<std::string, double, std::less<>> parts;

  bool empty() const { return parts.empty(); }
  double Sum() const {
    double sum = 0;
    for (const auto& [part, value] : parts) sum += value;
    return sum;
  }
  double Max() const {
    double max = parts.begin()->second;
    for (const auto& [part, value] : parts) max = std::max(max, value);
    return max;
  }
  // Weighted by `weights`' parts when each of ours has a positive one there, else the mean.
  double Mean(const Accumulator& weights) const {
    double weighted = 0;
    double total = 0;
    for (const auto& [part, value] : parts) {
      const auto weight = weights.parts.find(part);
      if (weight == weights.parts.end() || !(weight->second > 0)) {
        return Sum() / static_cast<double>(parts.size());
      }
      weighted += value * weight->second;
      total += weight->second;
    }
    return weighted / total;
  }
};

using Accumulators = std::array<Accumulator, kFigureCount>;

std::optional<std::int64_t> Count(double value) {
  if (!(value >= 0) || value > 9.0e15) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(value));
}

// The label values that tell separate schedulers apart: vLLM's engine, SGLang's dp rank.
std::string PartOf(const Sample& sample) {
  std::string part(sample.LabelValue("engine").value_or(""));
  part.push_back('/');
  part.append(sample.LabelValue("dp_rank").value_or(""));
  return part;
}

}  // namespace

EngineMap::EngineMap(std::vector<Rule> rules, std::vector<std::string> model_labels,
                     bool queries_are_prompt_tokens)
    : rules_(std::move(rules)),
      model_labels_(std::move(model_labels)),
      queries_are_prompt_tokens_(queries_are_prompt_tokens) {
  for (const Rule& rule : rules_) {
    families_.push_back(rule.family);
    families_.push_back(rule.series);
  }
  std::sort(families_.begin(), families_.end());
  families_.erase(std::unique(families_.begin(), families_.end()), families_.end());
}

EngineMap EngineMap::Vllm() {
  const std::string cache_info = "vllm:cache_config_info";
  Rule block_size = Series(cache_info, Figure::kBlockSize);
  block_size.value_label = "block_size";
  Rule blocks = Series(cache_info, Figure::kGpuBlocks);
  blocks.value_label = "num_gpu_blocks";
  return EngineMap(
      {
          Series("vllm:num_requests_running", Figure::kRunning),
          Series("vllm:num_requests_waiting", Figure::kWaiting),
          Series("vllm:kv_cache_usage_perc", Figure::kKvCacheUsage),
          Series("vllm:gpu_cache_usage_perc", Figure::kKvCacheUsage, 1),
          block_size,
          blocks,
          Series("vllm:prompt_tokens_total", Figure::kPromptTokens),
          Series("vllm:generation_tokens_total", Figure::kGenerationTokens),
          Series("vllm:prefix_cache_queries_total", Figure::kPrefixQueries),
          Series("vllm:gpu_prefix_cache_queries_total", Figure::kPrefixQueries, 1),
          Series("vllm:prefix_cache_hits_total", Figure::kPrefixHits),
          Series("vllm:gpu_prefix_cache_hits_total", Figure::kPrefixHits, 1),
      },
      {"model_name"});
}

EngineMap EngineMap::Sglang() {
  return EngineMap(
      {
          Series("sglang:num_running_reqs", Figure::kRunning),
          Series("sglang:num_queue_reqs", Figure::kWaiting),
          Series("sglang:token_usage", Figure::kKvCacheUsage),
          Series("sglang:page_size", Figure::kBlockSize),
          Series("sglang:num_pages", Figure::kGpuBlocks),
          Series("sglang:max_total_num_tokens", Figure::kMaxTokens),
          Series("sglang:prompt_tokens_total", Figure::kPromptTokens),
          Series("sglang:generation_tokens_total", Figure::kGenerationTokens),
          Series("sglang:cached_tokens_total", Figure::kPrefixHits),
          Series("sglang:cache_hit_rate", Figure::kPrefixHitRate),
      },
      {"model_name"}, /*queries_are_prompt_tokens=*/true);
}

EngineMap EngineMap::Trtllm() {
  const std::string requests = "nv_trt_llm_request_metrics";
  const std::string blocks = "nv_trt_llm_kv_cache_block_metrics";
  std::vector<Rule> rules = {
      Selected(requests, "request_type", "scheduled", Figure::kRunning),
      Selected(requests, "request_type", "waiting", Figure::kWaiting),
      Selected(requests, "request_type", "active", Figure::kActive),
      Selected(blocks, "kv_cache_block_type", "fraction", Figure::kKvCacheUsage),
      Selected(blocks, "kv_cache_block_type", "used", Figure::kUsedBlocks),
      Selected(blocks, "kv_cache_block_type", "max", Figure::kGpuBlocks),
      Selected(blocks, "kv_cache_block_type", "tokens_per", Figure::kBlockSize),
      HistogramSum("nv_llm_input_token_len", Figure::kPromptTokens),
      HistogramSum("nv_llm_output_token_len", Figure::kGenerationTokens),
  };
  // trtllm-serve's own names: bare in the releases of 2025-2026, prefixed in newer ones.
  for (const std::string prefix : {"", "trtllm_"}) {
    rules.push_back(Series(prefix + "num_requests_running", Figure::kRunning, 1));
    rules.push_back(Series(prefix + "num_requests_waiting", Figure::kWaiting, 1));
    rules.push_back(Series(prefix + "kv_cache_utilization", Figure::kKvCacheUsage, 1));
    rules.push_back(Series(prefix + "kv_cache_used_blocks", Figure::kUsedBlocks, 1));
    rules.push_back(Series(prefix + "kv_cache_max_blocks", Figure::kGpuBlocks, 1));
    rules.push_back(Series(prefix + "kv_cache_tokens_per_block", Figure::kBlockSize, 1));
    rules.push_back(Series(prefix + "kv_cache_hit_rate", Figure::kPrefixHitRate, 1));
    rules.push_back(Series(prefix + "prompt_tokens_total", Figure::kPromptTokens, 1));
    rules.push_back(Series(prefix + "generation_tokens_total", Figure::kGenerationTokens, 1));
  }
  return EngineMap(std::move(rules), {"model_name", "model"});
}

EngineMap EngineMap::Generic(const GenericMetricNames& names) {
  std::vector<Rule> rules;
  const std::array<std::pair<const std::string*, Figure>, 5> figures{{
      {&names.running, Figure::kRunning},
      {&names.waiting, Figure::kWaiting},
      {&names.kv_cache_usage, Figure::kKvCacheUsage},
      {&names.prompt_tokens, Figure::kPromptTokens},
      {&names.generation_tokens, Figure::kGenerationTokens},
  }};
  for (const auto& [name, figure] : figures) {
    if (!name->empty()) rules.push_back(Series(*name, figure));
  }
  return EngineMap(std::move(rules), {names.model_label});
}

std::vector<ModelFigures> EngineMap::Read(const Page& page) const {
  std::map<std::string, Accumulators, std::less<>> models;
  for (const Family& family : page.families) {
    for (const Sample& sample : family.samples) {
      for (const Rule& rule : rules_) {
        if (sample.name != rule.series) continue;
        if (!rule.select_label.empty() &&
            sample.LabelValue(rule.select_label) != rule.select_value) {
          continue;
        }
        std::optional<double> value = sample.value;
        if (!rule.value_label.empty()) {
          const std::optional<std::string_view> text = sample.LabelValue(rule.value_label);
          value = text ? ParseSampleValue(*text) : std::nullopt;
        }
        if (!value || !std::isfinite(*value)) continue;
        std::string_view model;
        for (const std::string& label : model_labels_) {
          if (const auto found = sample.LabelValue(label)) {
            model = *found;
            break;
          }
        }
        auto entry = models.find(model);
        if (entry == models.end()) entry = models.emplace(std::string(model), Accumulators()).first;
        Accumulator& acc = entry->second[static_cast<std::size_t>(rule.figure)];
        if (rule.preference > acc.preference) continue;
        if (rule.preference < acc.preference) {
          acc.parts.clear();
          acc.preference = rule.preference;
        }
        const auto [part, added] = acc.parts.try_emplace(PartOf(sample), *value);
        if (!added) part->second = std::max(part->second, *value);
      }
    }
  }
  // Series without a model label are the pod's: they fill in every model's missing figures.
  const auto pod = models.find("");
  if (pod != models.end() && models.size() > 1) {
    for (auto& [model, figures] : models) {
      if (model.empty()) continue;
      for (std::size_t f = 0; f < kFigureCount; ++f) {
        if (figures[f].empty()) figures[f] = pod->second[f];
      }
    }
    models.erase(pod);
  }

  std::vector<ModelFigures> out;
  for (const auto& entry : models) {
    const Accumulators& figures = entry.second;  // (a lambda may not capture a binding)
    const std::string& model = entry.first;
    const auto at = [&](Figure f) -> const Accumulator& {
      return figures[static_cast<std::size_t>(f)];
    };
    const auto sum = [&](Figure f) -> std::optional<double> {
      return at(f).empty() ? std::nullopt : std::optional<double>(at(f).Sum());
    };
    const Accumulator& blocks = at(Figure::kGpuBlocks);
    ModelFigures m{.model = model};
    m.running = sum(Figure::kRunning);
    m.waiting = sum(Figure::kWaiting);
    if (!m.waiting && m.running && !at(Figure::kActive).empty()) {
      m.waiting = std::max(0.0, at(Figure::kActive).Sum() - *m.running);
    }
    if (!at(Figure::kBlockSize).empty()) m.block_size = Count(at(Figure::kBlockSize).Max());
    if (!blocks.empty()) {
      m.num_gpu_blocks = Count(blocks.Sum());
    } else if (!at(Figure::kMaxTokens).empty() && m.block_size > 0) {
      m.num_gpu_blocks =
          Count(std::floor(at(Figure::kMaxTokens).Sum() / static_cast<double>(*m.block_size)));
    }
    if (!at(Figure::kKvCacheUsage).empty()) {
      m.kv_cache_usage = at(Figure::kKvCacheUsage).Mean(blocks);
    } else if (!at(Figure::kUsedBlocks).empty() && m.num_gpu_blocks > 0) {
      m.kv_cache_usage = at(Figure::kUsedBlocks).Sum() / static_cast<double>(*m.num_gpu_blocks);
    }
    if (m.kv_cache_usage) m.kv_cache_usage = std::clamp(*m.kv_cache_usage, 0.0, 1.0);
    m.prompt_tokens_total = sum(Figure::kPromptTokens);
    m.generation_tokens_total = sum(Figure::kGenerationTokens);
    m.prefix_cache_queries_total = sum(Figure::kPrefixQueries);
    m.prefix_cache_hits_total = sum(Figure::kPrefixHits);
    if (queries_are_prompt_tokens_ && m.prefix_cache_hits_total && !m.prefix_cache_queries_total) {
      m.prefix_cache_queries_total = m.prompt_tokens_total;
    }
    if (!at(Figure::kPrefixHitRate).empty()) {
      m.prefix_cache_hit_rate = std::clamp(at(Figure::kPrefixHitRate).Mean(blocks), 0.0, 1.0);
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace eoc::signals
