#include "sim/metrics_pages.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace eoc::sim {
namespace {

using Label = std::pair<std::string_view, std::string_view>;

// Label values escaped as the text format requires: backslash, double quote and line feed.
void AppendEscaped(std::string& out, std::string_view value) {
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
}

std::string Number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  std::array<char, 32> buf{};
  const auto result = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  return {buf.data(), result.ptr};
}

std::string Number(std::int64_t value) { return std::to_string(value); }

// Builds an exposition: one family at a time, its samples after its # HELP and # TYPE lines.
class Exposition {
 public:
  void Family(std::string_view name, std::string_view help, std::string_view type) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  }
  void Sample(std::string_view name, std::initializer_list<Label> labels,
              const std::string& value) {
    Sample(name, std::span<const Label>(labels.begin(), labels.size()), value);
  }
  void Sample(std::string_view name, std::span<const Label> labels, const std::string& value) {
    out_.append(name);
    if (!labels.empty()) {
      out_.push_back('{');
      bool first = true;
      for (const auto& [key, val] : labels) {
        if (!first) out_.push_back(',');
        first = false;
        out_.append(key).append("=\"");
        AppendEscaped(out_, val);
        out_.push_back('"');
      }
      out_.push_back('}');
    }
    out_.append(" ").append(value).append("\n");
  }
  // A family of one series.
  void One(std::string_view name, std::string_view help, std::string_view type,
           std::initializer_list<Label> labels, const std::string& value) {
    Family(name, help, type);
    Sample(name, labels, value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::int64_t UsedBlocks(const PageFigures& load) {
  const double used = std::round(std::clamp(load.kv_cache_usage, 0.0, 1.0) *
                                 static_cast<double>(load.num_gpu_blocks));
  return static_cast<std::int64_t>(used);
}

// vLLM's names (vllm/engine/metrics.py, vllm/v1/metrics/loggers.py): both KV-usage gauges, as
// releases during the rename from gpu_cache_usage_perc to kv_cache_usage_perc serve them.
void RenderVllm(Exposition& e, const PageFigures& load, const MetricsLabels& labels) {
  const Label model{"model_name", labels.model};
  e.One("vllm:num_requests_running", "Number of requests in model execution batches.", "gauge",
        {model}, Number(load.running));
  e.One("vllm:num_requests_waiting", "Number of requests waiting to be processed.", "gauge",
        {model}, Number(load.waiting));
  e.One("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", "gauge",
        {model}, Number(load.kv_cache_usage));
  e.One("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "gauge", {model},
        Number(load.kv_cache_usage));
  e.One("vllm:prompt_tokens_total", "Number of prefill tokens processed.", "counter", {model},
        Number(load.prompt_tokens_total));
  e.One("vllm:generation_tokens_total", "Number of generation tokens processed.", "counter",
        {model}, Number(load.generation_tokens_total));
  const std::string block_size = Number(load.block_size);
  const std::string blocks = Number(load.num_gpu_blocks);
  e.One("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", "gauge",
        {{"block_size", block_size},
         {"cache_dtype", "auto"},
         {"gpu_memory_utilization", "0.9"},
         {"num_cpu_blocks", "0"},
         {"num_gpu_blocks", blocks}},
        "1");
}

// SGLang's names (python/sglang/srt/metrics/collector.py): SchedulerMetricsCollector's gauges and
// TokenizerMetricsCollector's counters. page_size and num_pages are the KV pool's page geometry.
void RenderSglang(Exposition& e, const PageFigures& load, const MetricsLabels& labels) {
  const Label model{"model_name", labels.model};
  const std::int64_t max_tokens = load.num_gpu_blocks * load.block_size;
  e.One("sglang:num_running_reqs", "The number of running requests.", "gauge", {model},
        Number(load.running));
  e.One("sglang:num_queue_reqs", "The number of requests in the waiting queue.", "gauge", {model},
        Number(load.waiting));
  e.One("sglang:token_usage", "The token usage.", "gauge", {model}, Number(load.kv_cache_usage));
  e.One("sglang:num_used_tokens", "The number of used tokens.", "gauge", {model},
        Number(UsedBlocks(load) * load.block_size));
  e.One("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.",
        "gauge", {model}, Number(max_tokens));
  e.One("sglang:page_size", "KV cache page size in tokens.", "gauge", {model},
        Number(load.block_size));
  e.One("sglang:num_pages", "Number of KV cache pages.", "gauge", {model},
        Number(load.num_gpu_blocks));
  e.One("sglang:prompt_tokens_total", "Number of prefill tokens processed.", "counter", {model},
        Number(load.prompt_tokens_total));
  e.One("sglang:generation_tokens_total", "Number of generation tokens processed.", "counter",
        {model}, Number(load.generation_tokens_total));
}

// One of Triton's TensorRT-LLM token histograms (buckets 10, 50, 100, 500, 1000): every request
// is counted in the first bucket that holds the average, since only totals are known.
void TokenHistogram(Exposition& e, std::string_view name, std::string_view type, std::int64_t total,
                    std::uint64_t count) {
  static constexpr std::array<std::int64_t, 5> kBounds = {10, 50, 100, 500, 1000};
  const std::string bucket = std::string(name) + "_bucket";
  const double average = count == 0 ? 0 : static_cast<double>(total) / static_cast<double>(count);
  e.Family(name, "TRT LLM response metrics", "histogram");
  const Label model{"model", "tensorrt_llm"};
  const Label kind{"response_metric_type", type};
  const Label version{"version", "1"};
  const std::string n = std::to_string(count);
  for (const std::int64_t bound : kBounds) {
    const std::string le = std::to_string(bound);
    e.Sample(bucket, {model, kind, version, {"le", le}},
             average <= static_cast<double>(bound) ? n : "0");
  }
  e.Sample(bucket, {model, kind, version, {"le", "+Inf"}}, n);
  e.Sample(std::string(name) + "_sum", {model, kind, version}, Number(total));
  e.Sample(std::string(name) + "_count", {model, kind, version}, n);
}

// Triton's TensorRT-LLM backend (inflight_batcher_llm custom metrics), model "tensorrt_llm".
void RenderTrtllm(Exposition& e, const PageFigures& load, std::uint64_t served) {
  const Label model{"model", "tensorrt_llm"};
  const Label version{"version", "1"};
  const std::string_view requests = "nv_trt_llm_request_metrics";
  e.Family(requests, "TRT LLM request metrics", "gauge");
  const auto request = [&](std::string_view type, std::int64_t value) {
    e.Sample(requests, {model, {"request_type", type}, version}, Number(value));
  };
  request("active", load.running + load.waiting);
  request("context", 0);
  request("max", load.max_running);
  request("scheduled", load.running);
  request("waiting", load.waiting);

  const std::string_view blocks = "nv_trt_llm_kv_cache_block_metrics";
  e.Family(blocks, "TRT LLM KV cache block metrics", "gauge");
  const auto block = [&](std::string_view type, const std::string& value) {
    e.Sample(blocks, {{"kv_cache_block_type", type}, model, version}, value);
  };
  const std::int64_t used = UsedBlocks(load);
  block("fraction", Number(load.kv_cache_usage));
  block("free", Number(load.num_gpu_blocks - used));
  block("max", Number(load.num_gpu_blocks));
  block("tokens_per", Number(load.block_size));
  block("used", Number(used));

  TokenHistogram(e, "nv_llm_input_token_len", "total_input_tokens", load.prompt_tokens_total,
                 served);
  TokenHistogram(e, "nv_llm_output_token_len", "total_output_tokens", load.generation_tokens_total,
                 served);
}

// dcgm-exporter's default counters (etc/default-counters.csv), for GPU 0, attributed to the pod.
void RenderDcgm(Exposition& e, const PageFigures& load, const MetricsLabels& labels) {
  // A stable fake UUID per pod: 12 hex digits of a hash of its name.
  const std::uint64_t hash =
      std::hash<std::string>()(labels.pod_namespace + "/" + labels.pod_name) & 0xFFFFFFFFFFFFULL;
  std::array<char, 16> hex{};
  const char* end = std::to_chars(hex.data(), hex.data() + hex.size(), hash, 16).ptr;
  const auto digits = static_cast<std::size_t>(end - hex.data());
  const std::string uuid = "GPU-fa4e0000-0000-4000-8000-" + std::string(12 - digits, '0') +
                           std::string(hex.data(), digits);
  const Label gpu{"gpu", "0"};
  const Label id{"UUID", uuid};
  const Label device{"device", "nvidia0"};
  const Label ns{"namespace", labels.pod_namespace};
  const Label pod{"pod", labels.pod_name};
  e.One("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", {gpu, id, device, ns, pod},
        Number(load.watts));
  e.One("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).",
        "counter", {gpu, id, device, ns, pod}, Number(load.energy_millijoules_total));
}

// A stable fake GPU UUID from a hash of `seed`: 12 hex digits after a fixed prefix.
std::string FakeUuid(const std::string& seed) {
  const std::uint64_t hash = std::hash<std::string>()(seed) & 0xFFFFFFFFFFFFULL;
  std::array<char, 16> hex{};
  const char* end = std::to_chars(hex.data(), hex.data() + hex.size(), hash, 16).ptr;
  const auto digits = static_cast<std::size_t>(end - hex.data());
  return "GPU-fa4e0000-0000-4000-8000-" + std::string(12 - digits, '0') +
         std::string(hex.data(), digits);
}

// dcgm-exporter's page for a node (dcgm-kops-l4-full.prom for the HELP and TYPE lines,
// dcgm-aicr-h100-pod-labels-excerpt.prom for the labels of a GPU a pod holds).
void RenderDcgmExporter(Exposition& e, const std::string& node,
                        const std::vector<ExporterPod>& pods) {
  struct Gpu {
    std::string index, uuid, bus, device;
    const ExporterPod* pod;  // nullptr: idle
    int share;               // the pod's GPUs
  };
  std::vector<Gpu> gpus;
  const auto add = [&](const ExporterPod* pod, int share) {
    const std::size_t i = gpus.size();
    std::array<char, 8> bus{};
    char* end = std::to_chars(bus.data(), bus.data() + bus.size(), 0x18 + (i * 0x11), 16).ptr;
    std::string hex(bus.data(), end);
    std::transform(hex.begin(), hex.end(), hex.begin(),
                   [](char c) { return static_cast<char>(std::toupper(c)); });
    gpus.push_back(
        {.index = std::to_string(i),
         .uuid = FakeUuid(node + "/" + std::to_string(i)),
         .bus = "00000000:" + std::string(2 - std::min<std::size_t>(2, hex.size()), '0') + hex +
                ":00.0",
         .device = "nvidia" + std::to_string(i),
         .pod = pod,
         .share = share});
  };
  for (const ExporterPod& pod : pods) {
    const int n = std::max(1, pod.gpus);
    for (int g = 0; g < n; ++g) add(&pod, n);
  }
  add(nullptr, 1);
  constexpr double kIdleWatts = 60;
  const auto series = [&](std::string_view name, const Gpu& gpu, const std::string& value) {
    std::vector<Label> labels = {{"gpu", gpu.index},
                                 {"UUID", gpu.uuid},
                                 {"pci_bus_id", gpu.bus},
                                 {"device", gpu.device},
                                 {"modelName", "NVIDIA H100 80GB HBM3"},
                                 {"Hostname", node},
                                 {"DCGM_FI_DRIVER_VERSION", "580.105.08"}};
    if (gpu.pod != nullptr) {  // attributed to a pod: dcgm-exporter adds the pod's labels
      labels.insert(labels.end(), {{"container", gpu.pod->container},
                                   {"namespace", gpu.pod->pod_namespace},
                                   {"pod", gpu.pod->pod_name},
                                   {"pod_uid", ""}});
    }
    e.Sample(name, labels, value);
  };
  e.Family("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge");
  for (const Gpu& gpu : gpus) {
    series("DCGM_FI_DEV_POWER_USAGE", gpu,
           Number(gpu.pod == nullptr ? kIdleWatts : gpu.pod->watts / gpu.share));
  }
  e.Family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).",
           "counter");
  for (const Gpu& gpu : gpus) {
    const double joules = gpu.pod == nullptr ? 0 : gpu.pod->joules_total / gpu.share;
    series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu,
           Number(static_cast<std::int64_t>(std::floor(joules * 1000))));
  }
}

// Kepler 0.7's per-container counters (kepler-0.7-rapl-sysfs-excerpt.prom,
// kepler-0.6-container-joules-eks-excerpt.prom): families in alphabetical order, labels too, as
// the Go client writes them.
void RenderKeplerExporter(Exposition& e, const std::vector<ExporterPod>& pods) {
  struct Component {
    std::string_view family, help, source;
    double share;  // of a pod's joules
  };
  static constexpr std::array<Component, 4> kComponents = {{
      {"kepler_container_dram_joules_total", "Aggregated value in dram value from rapl-sysfs",
       "rapl-sysfs", 0.05},
      {"kepler_container_gpu_joules_total", "Aggregated value in gpu value from nvidia", "nvidia",
       0.75},
      {"kepler_container_other_joules_total", "Aggregated value in other value from rapl-sysfs",
       "rapl-sysfs", 0.05},
      {"kepler_container_package_joules_total", "Aggregated value in package value from rapl-sysfs",
       "rapl-sysfs", 0.15},
  }};
  // Of each component's joules: the dynamic part, the rest idle.
  constexpr double kDynamic = 0.8;
  for (const Component& c : kComponents) {
    e.Family(c.family, c.help, "counter");
    for (const ExporterPod& pod : pods) {
      const std::string id = FakeUuid(pod.pod_namespace + "/" + pod.pod_name).substr(28);
      const double joules = pod.joules_total * c.share;
      for (const bool dynamic : {true, false}) {
        e.Sample(c.family,
                 {{"container_id", id},
                  {"container_name", pod.container},
                  {"container_namespace", pod.pod_namespace},
                  {"mode", dynamic ? "dynamic" : "idle"},
                  {"pod_name", pod.pod_name},
                  {"source", c.source}},
                 Number(dynamic ? joules * kDynamic : joules * (1 - kDynamic)));
      }
    }
  }
}

}  // namespace

std::string_view ExporterName(Exporter exporter) {
  return exporter == Exporter::kKepler ? "kepler" : "dcgm";
}

std::optional<Exporter> ParseExporter(std::string_view name) {
  for (const Exporter e : {Exporter::kDcgm, Exporter::kKepler}) {
    if (name == ExporterName(e)) return e;
  }
  return std::nullopt;
}

std::string RenderExporterMetrics(Exporter exporter, const std::string& node,
                                  const std::vector<ExporterPod>& pods) {
  Exposition e;
  if (exporter == Exporter::kDcgm) {
    RenderDcgmExporter(e, node, pods);
  } else {
    RenderKeplerExporter(e, pods);
  }
  return e.Take();
}

double PowerCurve::TokensPerSecond(double t) const {
  const double p = std::chrono::duration<double>(period).count();
  if (p <= 0 || t <= 0) return low_tokens_per_second;
  const double u = std::fmod(t, p) / p;  // 0..1 through this period
  const double up = u < 0.5 ? 2 * u : 2 * (1 - u);
  return low_tokens_per_second + (high_tokens_per_second - low_tokens_per_second) * up;
}

double PowerCurve::Tokens(double t) const {
  const double p = std::chrono::duration<double>(period).count();
  if (t <= 0) return 0;
  if (p <= 0) return low_tokens_per_second * t;
  const double span = high_tokens_per_second - low_tokens_per_second;
  const double whole = std::floor(t / p);
  const double v = t - whole * p;  // into this period
  const double half = p / 2;
  double part = 0;
  if (v <= half) {
    part = low_tokens_per_second * v + span * v * v / p;  // rising: low + span * 2v/p
  } else {
    const double w = v - half;  // falling from high
    part =
        (low_tokens_per_second + span / 2) * half + high_tokens_per_second * w - span * w * w / p;
  }
  return whole * p * (low_tokens_per_second + span / 2) + part;
}

double EnergyIntegrator::Since(Clock::time_point now) const {
  return now <= since_ ? 0 : std::chrono::duration<double>(now - since_).count();
}

void EnergyIntegrator::Settle(Clock::time_point now) {
  if (now <= since_) return;
  joules_ = Joules(now);
  tokens_ = Tokens(now);
  since_ = now;
}

void EnergyIntegrator::Set(double watts, Clock::time_point now) {
  Settle(now);
  curve_.reset();
  watts_ = watts;
}

void EnergyIntegrator::Follow(const PowerCurve& curve, Clock::time_point now) {
  if (curve_ == curve) return;
  Settle(now);
  curve_ = curve;
  watts_ = 0;
}

double EnergyIntegrator::Watts(Clock::time_point now) const {
  return curve_ ? curve_->Watts(Since(now)) : watts_;
}

double EnergyIntegrator::Joules(Clock::time_point now) const {
  const double t = Since(now);
  return joules_ + (curve_ ? curve_->Joules(t) : watts_ * t);
}

double EnergyIntegrator::Tokens(Clock::time_point now) const {
  return tokens_ + (curve_ ? curve_->Tokens(Since(now)) : 0);
}

std::optional<api::Engine> ParseEngine(std::string_view name) {
  for (const api::Engine e : {api::Engine::kVllm, api::Engine::kSglang, api::Engine::kTrtllm}) {
    if (name == api::ToString(e)) return e;
  }
  return std::nullopt;
}

std::string RenderMetrics(api::Engine engine, const PageFigures& load, const MetricsLabels& labels,
                          bool dcgm, std::uint64_t served) {
  Exposition e;
  switch (engine) {
    case api::Engine::kVllm:
      RenderVllm(e, load, labels);
      break;
    case api::Engine::kSglang:
      RenderSglang(e, load, labels);
      break;
    case api::Engine::kTrtllm:
      RenderTrtllm(e, load, served);
      break;
    case api::Engine::kGeneric:
      throw std::invalid_argument(
          "RenderMetrics: a generic engine has no page of its own (its series are the pool's "
          "spec.metrics map)");
  }
  if (dcgm) RenderDcgm(e, load, labels);
  return e.Take();
}

}  // namespace eoc::sim
