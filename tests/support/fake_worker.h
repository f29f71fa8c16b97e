// A fake LLM inference worker for tests and the demo: an HTTP server on one loopback address that
// serves /metrics in the text form of a real engine (vLLM, SGLang, or TensorRT-LLM under Triton),
// with values the test sets, optionally with DCGM's power series for its pod, and answers OpenAI
// completions after a delay the test sets.
//
//   eoc::testing::FakeWorker worker({.address = "127.0.10.7:8000",
//                                    .engine = eoc::api::Engine::kSglang,
//                                    .pod_name = "web-0", .pod_namespace = "ns", .dcgm = true});
//   worker.Start();                                 // throws std::runtime_error if it cannot bind
//   worker.SetLoad({.running = 3, .waiting = 1, .kv_cache_usage = 0.4, .watts = 250});
//   worker.SetDelay(std::chrono::milliseconds(200));   // each completion answers after 200 ms
//   ... GET http://127.0.10.7:8000/metrics, POST /v1/completions ...
//   EXPECT_EQ(worker.requests_served(), 1);
//   worker.Stop();                                  // or let the destructor do it
//
// Served: GET /metrics, GET /health (200), POST /v1/completions, POST /v1/chat/completions (a small
// non-streaming OpenAI-shaped answer; `stream` is ignored). Every answer carries the header
// `x-eoc-fake-worker: <pod namespace>/<pod name>` (or the address when no pod is named), so tests
// can tell which worker served a request.
//
// The node agent configures a pod's worker from the pod's annotations (ApplyAnnotations below):
//   fake.eoc.dev/engine: sglang   fake.eoc.dev/delay-ms: "250"   fake.eoc.dev/model: llama
//   fake.eoc.dev/dcgm: "true"
//   fake.eoc.dev/metrics-fault: hang | trickle | huge | garbage  (faulty_metrics_server.h: the
//   worker then answers every request on its address with that fault, completions included)
//   fake.eoc.dev/exporter: dcgm | kepler  (the worker is then its node's energy exporter: its
//   /metrics is sim::RenderExporterMetrics's page for the pods `exporter_pods` lists; the node
//   agent lists the other workers on the exporter's node, with their watts and energy_joules())
//
// Every worker integrates its load's watts over time (energy_joules()): the counter an exporter
// reports for its pod. With a power curve (fake.eoc.dev/power-curve) its watts follow its token
// rate, and its page reports the curve's watts, energy counter and generated tokens.
//
// Limitation: the server's handlers are synchronous and run on its I/O threads, so the completion
// delay sleeps in the handler. A worker serves at most `threads` delayed requests at once; more
// wait for a thread. Stop() wakes sleeping handlers at once (they answer 503).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faulty_metrics_server.h"
#include "sim/metrics_pages.h"

namespace eoc::server {
class HttpServer;
class Request;
class Response;
}  // namespace eoc::server

namespace eoc::testing {

struct FakeWorkerOptions {
  std::string address = "127.0.0.1:0";  // ip:port; port 0 picks a free one
  api::Engine engine = api::Engine::kVllm;
  std::string model = "fake-model";  // model_name label, and the default answer's model
  std::string pod_name;              // for DCGM's pod/namespace labels and x-eoc-fake-worker
  std::string pod_namespace;
  bool dcgm = false;  // serve DCGM_FI_DEV_POWER_USAGE and _TOTAL_ENERGY_CONSUMPTION too
  int threads = 4;    // I/O threads: how many delayed completions run at once
  std::chrono::milliseconds delay{0};
  sim::PageFigures load;
  // Report `running` as load.running plus the completions being answered right now, so that real
  // traffic shows up in the load a scraper reads.
  bool count_in_flight = false;
  // Not kNone: a FaultyMetricsServer with this fault listens on the address instead.
  MetricsFault metrics_fault = MetricsFault::kNone;
  // Set: the worker is a node's energy exporter. /metrics serves sim::RenderExporterMetrics for
  // `node_name` and the pods `exporter_pods` lists (called on every scrape, from the server's
  // threads; none when unset) instead of an engine's page.
  std::optional<sim::Exporter> exporter;
  std::string node_name;
  std::function<std::vector<sim::ExporterPod>()> exporter_pods;
};

// Pod annotations that configure a pod's fake worker (the node agent reads them).
inline constexpr std::string_view kFakeAnnotationPrefix = "fake.eoc.dev/";
inline constexpr const char* kEngineAnnotation = "fake.eoc.dev/engine";   // vllm | sglang | trtllm
inline constexpr const char* kDelayAnnotation = "fake.eoc.dev/delay-ms";  // completion delay
inline constexpr const char* kModelAnnotation = "fake.eoc.dev/model";     // the model served
inline constexpr const char* kDcgmAnnotation = "fake.eoc.dev/dcgm";       // "true": DCGM series
inline constexpr const char* kMetricsFaultAnnotation = "fake.eoc.dev/metrics-fault";
inline constexpr const char* kExporterAnnotation = "fake.eoc.dev/exporter";  // dcgm | kepler
// The load a pod's worker reports: sim::PageFigures's running, waiting, kv_cache_usage (0..1),
// watts, power_curve.
inline constexpr const char* kRunningAnnotation = "fake.eoc.dev/running";
inline constexpr const char* kWaitingAnnotation = "fake.eoc.dev/waiting";
inline constexpr const char* kKvCacheUsageAnnotation = "fake.eoc.dev/kv-cache-usage";
inline constexpr const char* kWattsAnnotation = "fake.eoc.dev/watts";
// sim::PageFigures's power_curve: "idle=100,joules-per-token=0.2,tokens-per-second=200-600" and
// optionally ",period-ms=5000" (sim::PowerCurve's fields; the rate from low to high and back); "0"
// (what the node agent applies for a removed annotation) is no curve.
inline constexpr const char* kPowerCurveAnnotation = "fake.eoc.dev/power-curve";
inline constexpr std::array<const char*, 5> kLoadAnnotations = {
    kRunningAnnotation, kWaitingAnnotation, kKvCacheUsageAnnotation, kWattsAnnotation,
    kPowerCurveAnnotation};

// The curve a kPowerCurveAnnotation value describes; nullopt for one that cannot be read (an
// unknown or missing key, a negative number, low above high, a period of 0).
std::optional<sim::PowerCurve> ParsePowerCurve(std::string_view text);
// The operator's own list of models a pod serves: its first entry is the fake worker's model when
// fake.eoc.dev/model is absent.
inline constexpr const char* kModelsAnnotation = "eoc.dev/models";

// `load` changed as the load annotations (kLoadAnnotations) of `annotations` ask; the same rules.
// running and waiting: whole numbers >= 0; kv-cache-usage: 0 to 1; watts: >= 0; power-curve:
// ParsePowerCurve.
sim::PageFigures ApplyLoadAnnotations(sim::PageFigures load,
                                      const std::map<std::string, std::string>& annotations,
                                      std::vector<std::string>* problems = nullptr);

// `options` changed as `annotations` ask (options.load by ApplyLoadAnnotations). A value that
// cannot be read leaves the option as it was and is described in `problems` (when given).
FakeWorkerOptions ApplyAnnotations(FakeWorkerOptions options,
                                   const std::map<std::string, std::string>& annotations,
                                   std::vector<std::string>* problems = nullptr);

class FakeWorker {
 public:
  explicit FakeWorker(FakeWorkerOptions options);
  ~FakeWorker();  // Stop()s
  FakeWorker(const FakeWorker&) = delete;
  FakeWorker& operator=(const FakeWorker&) = delete;
  FakeWorker(FakeWorker&&) = delete;
  FakeWorker& operator=(FakeWorker&&) = delete;

  // Binds and serves. Throws std::runtime_error when the address cannot be listened on.
  void Start();
  // Wakes delayed handlers, closes every connection and joins the threads. Idempotent.
  void Stop();

  // The bound port (the chosen one for port 0); 0 before Start().
  std::uint16_t port() const;
  // "ip:port" as bound.
  std::string endpoint() const;
  api::Engine engine() const { return options_.engine; }
  std::optional<sim::Exporter> exporter() const { return options_.exporter; }

  // Thread-safe; take effect on the next request. Setting the same power curve again goes on
  // along it.
  void SetLoad(const sim::PageFigures& load);
  // The load as set (and as completions added to its token totals).
  sim::PageFigures load() const;
  // What /metrics reports now: load(), and with a power curve the curve's watts and
  // energy_millijoules_total, its tokens added to generation_tokens_total.
  sim::PageFigures reported_load() const;
  // The load's watts integrated over time since the worker was made, in joules.
  double energy_joules() const;
  void SetDelay(std::chrono::milliseconds delay);
  std::chrono::milliseconds delay() const;

  // Completions answered with 200 since Start().
  std::uint64_t requests_served() const { return served_.load(); }
  // Completions being answered (waiting out their delay) now.
  std::int64_t in_flight() const { return in_flight_.load(); }

  // What GET /metrics answers now.
  std::string MetricsText() const;
  // GET /metrics requests answered since Start(), and the X-Forwarded-Uri header of the last one
  // ("" when absent): the API server's pods/proxy sets it to the path asked of the API server
  // (/api/v1/namespaces/{ns}/pods/{name}:{port}/proxy/metrics); a direct scrape sends none.
  std::uint64_t metrics_requests() const { return metrics_requests_.load(); }
  std::string last_metrics_forwarded_uri() const;

 private:
  void Complete(const server::Request& request, server::Response& response, bool chat);
  // Sleeps `d` unless Stop() comes first; false when stopped.
  bool Wait(std::chrono::milliseconds d);
  void Tag(server::Response& response) const;

  const FakeWorkerOptions options_;
  const std::string tag_;
  std::atomic<std::uint64_t> metrics_requests_{0};
  mutable std::mutex forwarded_mu_;
  std::string last_forwarded_uri_;  // guarded by forwarded_mu_
  mutable std::mutex mu_;
  std::condition_variable wake_;
  sim::PageFigures load_;            // guarded by mu_
  sim::EnergyIntegrator energy_;     // guarded by mu_; follows load_.watts or .power_curve
  std::chrono::milliseconds delay_;  // guarded by mu_
  bool stopping_ = false;            // guarded by mu_
  std::atomic<std::uint64_t> served_{0};
  std::atomic<std::int64_t> in_flight_{0};
  std::unique_ptr<FaultyMetricsServer> faulty_;  // with a metrics fault, in the server's place
  std::unique_ptr<server::HttpServer> server_;   // last: stopped before the rest goes
};

}  // namespace eoc::testing
