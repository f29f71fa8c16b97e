#include "controller/scrape_metrics.h"

#include <utility>

#include "controller/pool_key.h"
#include "telemetry/metrics.h"

namespace eoc::controller {
namespace {

prometheus::Labels PoolLabels(const std::string& pool) {
  auto [ns, name] = SplitPoolKey(pool);
  return {{"namespace", std::move(ns)}, {"pool", std::move(name)}};
}

}  // namespace

ScrapeMetrics::ScrapeMetrics(prometheus::Registry& registry)
    : busyness_(telemetry::GaugeFamily(
          registry, "eoc_worker_busyness",
          "A worker's scraped (running + waiting) / max concurrency (when unknown: / "
          "256, or its KV-cache use if higher): 0 idle, 1 and more saturated.")),
      running_(telemetry::GaugeFamily(registry, "eoc_worker_running_requests",
                                      "Requests a worker's engine is running, as last scraped.")),
      waiting_(telemetry::GaugeFamily(registry, "eoc_worker_waiting_requests",
                                      "Requests waiting in a worker's engine, as last scraped.")),
      kv_cache_usage_(telemetry::GaugeFamily(registry, "eoc_worker_kv_cache_usage_ratio",
                                             "A worker's KV-cache use, 0 to 1, as last scraped.")),
      tokens_per_second_(
          telemetry::GaugeFamily(registry, "eoc_worker_tokens_per_second",
                                 "Prompt plus generated tokens per second of a worker, over the "
                                 "interval between its last two scrapes.")),
      watts_(telemetry::GaugeFamily(
          registry, "eoc_worker_watts",
          "A worker's power, from the energy exporter's series on its own page or on its "
          "node exporter's (source: DCGM, Kepler, Kepler 0.7): the joules counter's rate "
          "over the last interval, else the watts gauge.")),
      marginal_(telemetry::GaugeFamily(
          registry, "eoc_worker_marginal_joules_per_token",
          "The joules one more token costs on a worker, as routing weighs it "
          "(estimate: measured, the slope of its watts over its token rate; profile, "
          "the spec's energy profile).")),
      grams_(telemetry::GaugeFamily(
          registry, "eoc_worker_marginal_grams_co2e_per_token",
          "The grams CO2e one more token costs on a worker: its marginal joules per "
          "token times its zone's grid intensity (estimate: as the joules').")),
      scrapes_(prometheus::BuildCounter()
                   .Name("eoc_scrapes_total")
                   .Help("Scrapes of workers' metrics pages, by result (ok, deadline, "
                         "connect-refused, too-large, http-status, malformed, transport, "
                         "cancelled, overloaded, parse-error, missing-series).")
                   .Register(registry)),
      exporter_scrapes_(prometheus::BuildCounter()
                            .Name("eoc_exporter_scrapes_total")
                            .Help("Scrapes of the pool's node energy exporters' pages "
                                  "(energy.exporter), by result (as eoc_scrapes_total's; "
                                  "missing-series: none of the power series).")
                            .Register(registry)),
      duration_(prometheus::BuildHistogram()
                    .Name("eoc_scrape_duration_seconds")
                    .Help("Time from a scrape's start to its page (or error) arriving.")
                    .Register(registry)) {}

prometheus::Counter& ScrapeMetrics::ResultCounter(
    prometheus::Family<prometheus::Counter>& family, const std::string& pool, ScrapeResult result,
    std::map<ScrapeResult, prometheus::Counter*>& counters) {
  auto& counter = counters[result];
  if (counter == nullptr) {
    auto labels = PoolLabels(pool);
    labels.emplace("result", std::string(ResultName(result)));
    counter = &family.Add(labels);
  }
  return *counter;
}

void ScrapeMetrics::ExporterScraped(const std::string& pool, ScrapeResult result) {
  const std::lock_guard lock(mu_);
  ResultCounter(exporter_scrapes_, pool, result, pools_[pool].exporter_scrapes).Increment();
}

void ScrapeMetrics::Scraped(const std::string& pool, ScrapeResult result, double seconds) {
  const std::lock_guard lock(mu_);
  Pool& p = pools_[pool];
  ResultCounter(scrapes_, pool, result, p.scrapes).Increment();
  if (p.duration == nullptr) {
    p.duration = &duration_.Add(PoolLabels(pool), prometheus::Histogram::BucketBoundaries{
                                                      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                      0.25, 0.5, 1, 2.5, 5, 10});
  }
  p.duration->Observe(seconds);
}

void ScrapeMetrics::SetWorker(const std::string& pool, const std::string& pod,
                              const WorkerGauges& gauges) {
  const std::lock_guard lock(mu_);
  auto& workers = pools_[pool].workers;
  auto it = workers.find(pod);
  if (it == workers.end()) {
    auto labels = PoolLabels(pool);
    labels.emplace("pod", SplitPoolKey(pod).second);
    it = workers
             .emplace(pod, Worker{.busyness = &busyness_.Add(labels),
                                  .running = &running_.Add(labels),
                                  .waiting = &waiting_.Add(labels),
                                  .kv_cache_usage = &kv_cache_usage_.Add(labels),
                                  .tokens_per_second = &tokens_per_second_.Add(labels),
                                  .labels = labels})
             .first;
  }
  Worker& w = it->second;
  SetLabelled(watts_, w, "source",
              gauges.watts_source ? std::string(signals::EnergySourceName(*gauges.watts_source))
                                  : std::string(),
              gauges.watts_source ? gauges.watts : std::nullopt, w.watts, w.watts_source);
  SetLabelled(marginal_, w, "estimate", gauges.marginal_measured ? "measured" : "profile",
              gauges.marginal_joules_per_token > 0 ? std::optional(gauges.marginal_joules_per_token)
                                                   : std::nullopt,
              w.marginal, w.marginal_estimate);
  SetLabelled(grams_, w, "estimate", gauges.marginal_measured ? "measured" : "profile",
              gauges.grams_per_token > 0 ? std::optional(gauges.grams_per_token) : std::nullopt,
              w.grams, w.grams_estimate);
  w.busyness->Set(gauges.busyness);
  w.running->Set(gauges.running);
  w.waiting->Set(gauges.waiting);
  w.kv_cache_usage->Set(gauges.kv_cache_usage);
  w.tokens_per_second->Set(gauges.tokens_per_second);
}

void ScrapeMetrics::SetLabelled(prometheus::Family<prometheus::Gauge>& family, const Worker& w,
                                const char* name, const std::string& value,
                                std::optional<double> figure, prometheus::Gauge*& gauge,
                                std::string& current) {
  if (gauge != nullptr && (!figure || current != value)) {
    family.Remove(gauge);
    gauge = nullptr;
  }
  if (!figure) return;
  if (gauge == nullptr) {
    prometheus::Labels labels = w.labels;
    labels.emplace(name, value);
    gauge = &family.Add(labels);
    current = value;
  }
  gauge->Set(*figure);
}

void ScrapeMetrics::RemoveGauges(const Worker& w) {
  busyness_.Remove(w.busyness);
  running_.Remove(w.running);
  waiting_.Remove(w.waiting);
  kv_cache_usage_.Remove(w.kv_cache_usage);
  tokens_per_second_.Remove(w.tokens_per_second);
  if (w.watts != nullptr) watts_.Remove(w.watts);
  if (w.marginal != nullptr) marginal_.Remove(w.marginal);
  if (w.grams != nullptr) grams_.Remove(w.grams);
}

void ScrapeMetrics::RemoveWorker(const std::string& pool, const std::string& pod) {
  const std::lock_guard lock(mu_);
  const auto p = pools_.find(pool);
  if (p == pools_.end()) return;
  const auto w = p->second.workers.find(pod);
  if (w == p->second.workers.end()) return;
  RemoveGauges(w->second);
  p->second.workers.erase(w);
}

void ScrapeMetrics::RemovePool(const std::string& pool) {
  const std::lock_guard lock(mu_);
  const auto p = pools_.find(pool);
  if (p == pools_.end()) return;
  for (const auto& [pod, w] : p->second.workers) RemoveGauges(w);
  for (const auto& [result, counter] : p->second.scrapes) scrapes_.Remove(counter);
  for (const auto& [result, counter] : p->second.exporter_scrapes) {
    exporter_scrapes_.Remove(counter);
  }
  if (p->second.duration != nullptr) duration_.Remove(p->second.duration);
  pools_.erase(p);
}

}  // namespace eoc::controller
