// The scrape loop's Prometheus metrics: each worker's scraped load (labelled namespace, pool and
// pod: removed when the worker leaves, and absent while its metrics are unavailable), and per
// pool the scrapes by result and their duration, and the node exporters' scrapes by result
// (removed with the pool). A worker's energy
// gauges are there only while known: its watts labelled with their source (the exporter's
// series), its marginal joules per token labelled with how it was had (measured: the slope of
// its watts; profile: the spec's profile), and its grams CO2e per token (the same, times its
// zone's grid intensity).
//
//   ScrapeMetrics m(metrics.registry());
//   m.Scraped("prod/chat", ScrapeResult::kOk, 0.012);
//   m.ExporterScraped("prod/chat", ScrapeResult::kDeadline);
//   m.SetWorker("prod/chat", "prod/vllm-0", {.busyness = 0.2, .running = 3, ...});
//   m.RemoveWorker("prod/chat", "prod/vllm-0");  ...  m.RemovePool("prod/chat");
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "controller/scrape_page.h"

namespace eoc::controller {

struct WorkerGauges {
  double busyness = 0;
  double running = 0;
  double waiting = 0;
  double kv_cache_usage = 0;
  double tokens_per_second = 0;
  std::optional<double> watts;  // unknown: no gauge
  std::optional<signals::EnergySource> watts_source;
  double marginal_joules_per_token = 0;  // 0: unknown, no gauge
  bool marginal_measured = false;        // else the profile's
  double grams_per_token = 0;            // the marginal x the zone's intensity; 0: unknown
};

class ScrapeMetrics {
 public:
  explicit ScrapeMetrics(prometheus::Registry& registry);

  // `pool` and `pod` are "namespace/name" keys; the series carry namespace, pool and pod names.
  void Scraped(const std::string& pool, ScrapeResult result, double seconds);
  // A fetch of one of the pool's node exporters' pages (energy.exporter).
  void ExporterScraped(const std::string& pool, ScrapeResult result);
  void SetWorker(const std::string& pool, const std::string& pod, const WorkerGauges& gauges);
  void RemoveWorker(const std::string& pool, const std::string& pod);
  void RemovePool(const std::string& pool);

 private:
  struct Worker {
    prometheus::Gauge* busyness;
    prometheus::Gauge* running;
    prometheus::Gauge* waiting;
    prometheus::Gauge* kv_cache_usage;
    prometheus::Gauge* tokens_per_second;
    prometheus::Labels labels;  // namespace, pool, pod
    // The energy gauges and their label's value; null while unknown.
    prometheus::Gauge* watts = nullptr;
    std::string watts_source;
    prometheus::Gauge* marginal = nullptr;
    std::string marginal_estimate;
    prometheus::Gauge* grams = nullptr;
    std::string grams_estimate;
  };
  struct Pool {
    std::map<ScrapeResult, prometheus::Counter*> scrapes;
    std::map<ScrapeResult, prometheus::Counter*> exporter_scrapes;
    prometheus::Histogram* duration = nullptr;
    std::map<std::string, Worker> workers;  // by pod key
  };
  void RemoveGauges(const Worker& w);
  // The pool's counter of `family` for `result` in `counters`, added on first use.
  static prometheus::Counter& ResultCounter(prometheus::Family<prometheus::Counter>& family,
                                            const std::string& pool, ScrapeResult result,
                                            std::map<ScrapeResult, prometheus::Counter*>& counters);
  // Sets `gauge` (of `family`, labelled `name`=`value` besides the worker's) to `figure`, moving
  // it to the new label value when it changed; removes it for nullopt.
  static void SetLabelled(prometheus::Family<prometheus::Gauge>& family, const Worker& w,
                          const char* name, const std::string& value, std::optional<double> figure,
                          prometheus::Gauge*& gauge, std::string& current);

  prometheus::Family<prometheus::Gauge>& busyness_;
  prometheus::Family<prometheus::Gauge>& running_;
  prometheus::Family<prometheus::Gauge>& waiting_;
  prometheus::Family<prometheus::Gauge>& kv_cache_usage_;
  prometheus::Family<prometheus::Gauge>& tokens_per_second_;
  prometheus::Family<prometheus::Gauge>& watts_;
  prometheus::Family<prometheus::Gauge>& marginal_;
  prometheus::Family<prometheus::Gauge>& grams_;
  prometheus::Family<prometheus::Counter>& scrapes_;
  prometheus::Family<prometheus::Counter>& exporter_scrapes_;
  prometheus::Family<prometheus::Histogram>& duration_;
  std::mutex mu_;
  std::map<std::string, Pool> pools_;  // guarded by mu_
};

}  // namespace eoc::controller
