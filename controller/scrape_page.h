// One scrape's verdict and figures: a fetched page (or the fetch's error) read through the pool's
// engine map into what the worker's routing Load needs. Pure apart from the parse.
//
//   ScrapeReading r = ReadScrape(result, EngineMap::Vllm());
//   if (r.result == ScrapeResult::kOk) {
//     routing::Load load = LoadOf(r.figures, rate.Add(now, r.figures.prompt_tokens_total, ...));
//   } else {
//     ResultName(r.result)   // "deadline", "parse-error", "missing-series", ...; r.message: why
//   }
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/inference_pool.h"
#include "common/enum_name.h"
#include "controller/scrape/metrics_fetcher.h"
#include "routing/worker.h"
#include "signals/energy_metrics.h"
#include "signals/engine_metrics.h"
#include "signals/token_rate.h"
#include "signals/worker_energy.h"

namespace eoc::controller {

// How a scrape ended: ok, one of the fetch's error kinds (FetchErrorKind, same names), or a page
// that was fetched but cannot be used.
enum class ScrapeResult : std::uint8_t {
  kOk,
  kDeadline,
  kConnectRefused,
  kTooLarge,
  kHttpStatus,
  kMalformed,
  kTransport,
  kCancelled,
  kOverloaded,
  kParseError,     // not the Prometheus text format (ParseExposition's error)
  kMissingSeries,  // parsed, but without the engine's running-requests series
};
inline constexpr std::array<EnumName<ScrapeResult>, 11> kScrapeResultNames{{
    {ScrapeResult::kOk, "ok"},
    {ScrapeResult::kDeadline, "deadline"},
    {ScrapeResult::kConnectRefused, "connect-refused"},
    {ScrapeResult::kTooLarge, "too-large"},
    {ScrapeResult::kHttpStatus, "http-status"},
    {ScrapeResult::kMalformed, "malformed"},
    {ScrapeResult::kTransport, "transport"},
    {ScrapeResult::kCancelled, "cancelled"},
    {ScrapeResult::kOverloaded, "overloaded"},
    {ScrapeResult::kParseError, "parse-error"},
    {ScrapeResult::kMissingSeries, "missing-series"},
}};
// The `result` label of eoc_scrapes_total.
inline std::string_view ResultName(ScrapeResult result) {
  return EnumToString(result, kScrapeResultNames);
}
ScrapeResult ResultOf(FetchErrorKind kind);

// A worker's figures summed over the models on its page.
struct WorkerFigures {
  double running = 0;  // requests, over every model
  double waiting = 0;
  std::optional<double> kv_cache_usage;  // 0..1: the largest of the models' (they share blocks)
  std::int64_t block_size = 0;           // 0: not reported
  std::int64_t gpu_blocks = 0;           // 0: not reported
  std::optional<double> prompt_tokens_total;  // counters, over every model
  std::optional<double> generation_tokens_total;
};

struct ScrapeReading {
  ScrapeResult result = ScrapeResult::kOk;
  std::string message;    // for failures: what went wrong (the fetch's or parser's message)
  WorkerFigures figures;  // for kOk
  // For kOk: the worker's own power, when its page carries an energy exporter's series for it.
  std::optional<signals::PodEnergy> energy;
};

// What a pool's pages are read with: its engine's map, and the energy exporters' maps whose
// series a worker's own page may carry (spec.energy.source Auto: DCGM, then Kepler; DCGM or
// Kepler: that one; Static: none), with the parser's filter keeping every family they read.
struct PageMaps {
  signals::EngineMap engine;
  std::vector<signals::EnergyMap> energy;  // in the order they are tried
  signals::FamilyFilter keep;
};
PageMaps PageMapsOf(signals::EngineMap engine, api::EnergySource source);

// The verdict on one fetch of the worker `pod` ("namespace/name"): its error, else the page
// through `maps`. The energy is the first map's series labelled with the worker's pod.
ScrapeReading ReadScrape(const FetchResult& fetched, const PageMaps& maps, std::string_view pod);
// The same with the engine's map alone (no energy is read).
ScrapeReading ReadScrape(const FetchResult& fetched, const signals::EngineMap& map);

// One fetch of a node's energy exporter (dcgm-exporter, Kepler: a DaemonSet pod), read through
// the pool's energy maps.
struct ExporterReading {
  // kOk; a fetch error or kParseError; kMissingSeries: none of the maps' series is on the page.
  ScrapeResult result = ScrapeResult::kOk;
  std::string message;  // for failures: why
  // For kOk: each pod's power ("namespace/name" -> its reading by the first map that has one).
  std::map<std::string, signals::PodEnergy> pods;
  bool truncated = false;  // some map read at most EnergyMap::kMaxPods pods and dropped the rest
};
ExporterReading ReadExporterPage(const FetchResult& fetched, const PageMaps& maps);

// The routing Load of a good scrape: running, waiting, KV-cache use, blocks (total and free, when
// the engine gives the block size and count), tokens per second (`rate`; 0 without one),
// available.
routing::Load LoadOf(const WorkerFigures& figures,
                     const std::optional<signals::TokenRate::Rate>& rate);

// What one worker's good scrapes carry from one to the next: its token rate (from the pages'
// token counters) and its energy (watts and marginal joules per token).
struct WorkerReadings {
  signals::TokenRate rate;
  signals::WorkerEnergy energy;
  bool own_energy = false;                  // its last good page carried its own power series
  std::optional<double> tokens_per_second;  // of its last good page; nullopt: no rate yet
};

// A good scrape (`reading.result` kOk) of a worker, fetched at `at`, in the zone of
// `grid_g_per_kwh`: its routing Load (LoadOf, with the token rate its counters give), and, when
// the page carries the worker's own power, that reading fed to `w.energy` (a switch between its
// own page and another source starts the energy's counter afresh). The Load's marginal joules per
// token are w.energy's after that; a caller that reads the power elsewhere (the node's exporter)
// sets them again once it has. The scrape loop and the simulator read their pages so.
routing::Load ObserveGoodScrape(const ScrapeReading& reading,
                                std::chrono::steady_clock::time_point at, double grid_g_per_kwh,
                                WorkerReadings& w);

}  // namespace eoc::controller
