// The /metrics pages of LLM inference workers, rendered from figures: the text exposition format
// of a real engine (vLLM, SGLang, or TensorRT-LLM under Triton), with the series names and labels
// those engines serve, and optionally dcgm-exporter's power series for the worker's pod. The
// simulator's workers serve these pages to the controller's scrape reader (ReadScrape), and the
// test fleet's fake workers (tests/support/fake_worker.h) serve them over HTTP.
//
//   std::string page = eoc::sim::RenderMetrics(eoc::api::Engine::kSglang,
//                                              {.running = 3, .kv_cache_usage = 0.4},
//                                              {.model = "llama"}, /*dcgm=*/false);
//
// And the page of a node's energy exporter (dcgm-exporter or Kepler 0.7, the DaemonSet pod that
// reports every pod on its node), from each pod's watts and the energy they add up to:
//
//   EnergyIntegrator energy(/*watts=*/250, start);   // the joules counter integrates the watts
//   std::string page = eoc::sim::RenderExporterMetrics(
//       eoc::sim::Exporter::kDcgm, "gpu-a",
//       {{.pod_namespace = "ns", .pod_name = "web-0", .watts = 250,
//         .joules_total = energy.Joules(now)}});
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/inference_pool.h"

namespace eoc::sim {

// The engine of that name among those whose pages are rendered here (vLLM, SGLang, TensorRT-LLM,
// named as the CRD names them: api::ToString); nullopt for any other name, "generic" included.
std::optional<api::Engine> ParseEngine(std::string_view name);

// A synthetic workload whose power follows its token rate, as DESIGN.md's energy model has it:
// watts = idle_watts + joules_per_token x tokens/s, the rate going linearly from low to high and
// back over each `period` (a triangle wave, so that scrapes at any interval see rates spread
// enough for a slope). Times are seconds since the curve began.
struct PowerCurve {
  double idle_watts = 0;
  double joules_per_token = 0;  // the marginal energy, J/token (W per token/s)
  double low_tokens_per_second = 0;
  double high_tokens_per_second = 0;
  std::chrono::milliseconds period{5000};

  double TokensPerSecond(double t) const;
  double Tokens(double t) const;  // generated over [0, t]: the rate's integral, exactly
  double Watts(double t) const { return idle_watts + joules_per_token * TokensPerSecond(t); }
  double Joules(double t) const { return idle_watts * t + joules_per_token * Tokens(t); }
  bool operator==(const PowerCurve&) const = default;
};

// What /metrics reports. Counters are totals since the worker started; the worker adds each
// completion's prompt and generated tokens to the two token totals.
struct PageFigures {
  std::int64_t running = 0;
  std::int64_t waiting = 0;
  double kv_cache_usage = 0;  // 0..1: the fraction of KV blocks in use
  std::int64_t num_gpu_blocks = 8192;
  std::int64_t block_size = 16;    // tokens per KV block (SGLang: page size)
  std::int64_t max_running = 256;  // TensorRT-LLM's and SGLang's max running requests
  std::int64_t prompt_tokens_total = 0;
  std::int64_t generation_tokens_total = 0;
  double watts = 0;                           // DCGM_FI_DEV_POWER_USAGE
  std::int64_t energy_millijoules_total = 0;  // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
  // Set: a fake worker (tests/support/fake_worker.h) draws and generates as the curve says: it
  // reports the curve's watts, the energy they add up to, and its tokens added to
  // generation_tokens_total (`watts` and `energy_millijoules_total` are then its own).
  std::optional<PowerCurve> power_curve;
};

// Labels of the series: the model the engine serves, and the pod DCGM attributes the GPU to.
struct MetricsLabels {
  std::string model = "fake-model";
  std::string pod_name;
  std::string pod_namespace;
};

// The whole /metrics text of `engine` (with # HELP and # TYPE lines), plus DCGM's series when
// `dcgm` is set. `served` is the number of completions answered (TensorRT-LLM's token histograms
// count requests). The series, by form:
//   vLLM    vllm:num_requests_running, vllm:num_requests_waiting, vllm:gpu_cache_usage_perc and
//           vllm:kv_cache_usage_perc (old and new name), vllm:prompt_tokens_total,
//           vllm:generation_tokens_total, vllm:cache_config_info{block_size,num_gpu_blocks,...} 1;
//           labelled model_name
//   SGLang  sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage,
//           sglang:num_used_tokens, sglang:max_total_num_tokens, sglang:page_size,
//           sglang:num_pages, sglang:prompt_tokens_total, sglang:generation_tokens_total;
//           labelled model_name
//   TRT-LLM nv_trt_llm_request_metrics{request_type=active|context|max|scheduled|waiting},
//   (Triton) nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction|free|max|tokens_per|
//           used}, histograms nv_llm_input_token_len and nv_llm_output_token_len (their _sum are
//           the token totals); labelled model="tensorrt_llm", version="1"
//   DCGM    DCGM_FI_DEV_POWER_USAGE (W), DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ, a counter);
//           labelled gpu, UUID, device, namespace, pod
std::string RenderMetrics(api::Engine engine, const PageFigures& load, const MetricsLabels& labels,
                          bool dcgm, std::uint64_t served = 0);

// A node's energy exporter: dcgm-exporter (per GPU) or Kepler 0.7 (per container).
enum class Exporter { kDcgm, kKepler };

// "dcgm" or "kepler".
std::string_view ExporterName(Exporter exporter);
// The exporter of that name (as ExporterName writes it); nullopt for anything else.
std::optional<Exporter> ParseExporter(std::string_view name);

// One pod an exporter reports.
struct ExporterPod {
  std::string pod_namespace;
  std::string pod_name;
  std::string container = "main";
  double watts = 0;         // now
  double joules_total = 0;  // since the pod started
  int gpus = 1;             // DCGM: the GPUs it holds (at least 1), its power split evenly
};

// The /metrics page of a node's exporter listing `pods` (in that order), with # HELP and # TYPE:
//   DCGM    DCGM_FI_DEV_POWER_USAGE (W, gauge) and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ, a
//           whole-number counter) per GPU, labelled as dcgm-exporter with pod attribution does:
//           gpu, UUID, pci_bus_id, device, modelName, Hostname (the node),
//           DCGM_FI_DRIVER_VERSION, container, namespace, pod, pod_uid (empty). GPUs are numbered
//           across the pods in order; one more GPU, held by no pod (no pod labels), idles at 60 W.
//   Kepler  0.7's kepler_container_{package,dram,gpu,other}_joules_total counters per container,
//           labelled container_id, container_name, container_namespace, mode (dynamic, idle),
//           pod_name, source; a pod's joules are split over the eight series (they add up to
//           joules_total). Kepler 0.7 has no watts gauge: a rate of the counters is the watts.
std::string RenderExporterMetrics(Exporter exporter, const std::string& node,
                                  const std::vector<ExporterPod>& pods);

// The energy a power draw adds up to: the integral of the watts over time, exactly, for watts
// that change in steps or follow a PowerCurve (whose tokens it adds up too). Each change goes on
// from the totals so far. Not thread-safe.
class EnergyIntegrator {
 public:
  using Clock = std::chrono::steady_clock;
  explicit EnergyIntegrator(double watts = 0, Clock::time_point start = Clock::now())
      : watts_(watts), since_(start) {}

  // From `now` on the draw is `watts` (`now` before the last change counts as the last change).
  void Set(double watts, Clock::time_point now);
  // From `now` on the draw follows `curve`, from its beginning (the same: nothing changes).
  void Follow(const PowerCurve& curve, Clock::time_point now);
  double watts() const { return watts_; }  // the constant draw (0 while following a curve)
  // The draw at `now`.
  double Watts(Clock::time_point now) const;
  // Joules since the start, at `now`.
  double Joules(Clock::time_point now) const;
  // Tokens the curves generated since the start, at `now` (0 without a curve).
  double Tokens(Clock::time_point now) const;

 private:
  double Since(Clock::time_point now) const;  // seconds from since_ to now, at least 0
  void Settle(Clock::time_point now);         // the totals up to `now` into joules_ and tokens_

  double watts_;
  std::optional<PowerCurve> curve_;
  Clock::time_point since_;  // of the last change
  double joules_ = 0;        // up to since_
  double tokens_ = 0;        // up to since_
};

}  // namespace eoc::sim
