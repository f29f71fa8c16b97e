// The scrape loop (every replica, leader or not): scrapes each worker of each pool it is given
// (ScrapePools, fed by the pool reconciler) every spec.metrics.intervalSeconds, each fetch within
// spec.metrics.timeoutSeconds, through the fetcher spec.metrics.access names; reads the page with
// the pool's engine map, computes the worker's token rate (and, when its page carries an energy
// exporter's series for it, its watts and marginal joules per token), and hands the Load to the
// pool's routing state (PoolState::ObserveLoad, with the mark taken as the fetch started, so picks
// made while it was in flight still count). A failed scrape (a fetch error, a page that does not
// parse, a page without the engine's running series) marks that worker's metrics unavailable and
// touches no other worker or the pool's interval.
//
// A worker whose own page carries no power series takes its watts from its node's energy exporter
// (ScrapeTarget::exporter): each exporter a pool's targets name is fetched once a round, with the
// workers, and its page read once for all of them. A worker's figures pair its page and the
// exporter's page of the same round, whichever comes back first; when the exporter's comes back
// later, the worker's gauges and marginal show it from its next scrape. A failed exporter fetch, or
// a page without the worker's pod, leaves the worker's watts unknown for that round.
//
//   ScrapeLoop loop({.direct = &direct, .proxy = &proxy}, {.directory = &directory,
//                   .metrics = &scrape_metrics}, RealClock());
//   loop.Start();
//   loop.SetPool(ScrapePoolOf(pool, members, grid, exporters));  // from the reconciler; never
//   blocks loop.Summary("prod/chat")->ok                      // workers whose last scrape was good
//   loop.Stop();
//
// One thread: it starts each pool's round when due (fixed rate from the pool's first round; a
// changed interval counts from the last round), takes the fetchers' callbacks from a queue (the
// callbacks only queue the page and wake it), parses, and sleeps on the injected clock until the
// next round or the next arrival. A worker whose fetch has not come back when its next round is
// due is not fetched twice (the fetcher's deadline bounds how long that lasts). Bounded: one fetch
// per worker at a time, so the queue holds at most one page per worker; a worker's state (token
// rate, mark, gauges) goes when it leaves its pool, a pool's when it goes.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/clock.h"
#include "controller/scrape/metrics_fetcher.h"
#include "controller/scrape_metrics.h"
#include "controller/scrape_page.h"
#include "controller/scrape_pool.h"
#include "routing/pool_directory.h"
#include "signals/token_rate.h"
#include "signals/worker_energy.h"

namespace eoc::controller {

// The fetcher for each spec.metrics.access; one may be null when no pool uses it (its pools'
// scrapes then fail as transport errors).
struct ScrapeFetchers {
  MetricsFetcher* direct = nullptr;
  MetricsFetcher* proxy = nullptr;
};

struct ScrapeLoopOptions {
  // Where each pool's routing state is found by key; null: loads go nowhere (metrics only).
  routing::PoolDirectory* directory = nullptr;
  ScrapeMetrics* metrics = nullptr;  // null: none
};

class ScrapeLoop final : public ScrapePools {
 public:
  // The fetchers, directory, metrics and clock must outlive the loop; the fetchers may call back
  // after it is gone (those answers are dropped).
  ScrapeLoop(ScrapeFetchers fetchers, ScrapeLoopOptions options, const Clock& clock);
  ~ScrapeLoop() override;  // Stop()s
  ScrapeLoop(const ScrapeLoop&) = delete;
  ScrapeLoop& operator=(const ScrapeLoop&) = delete;
  ScrapeLoop(ScrapeLoop&&) = delete;
  ScrapeLoop& operator=(ScrapeLoop&&) = delete;

  void Start();
  // Ends the loop at once (fetches in flight are left to their fetcher; their answers dropped).
  void Stop();

  // ScrapePools: queued for the loop's thread, which applies the latest per pool.
  void SetPool(ScrapePool pool) override;
  void RemovePool(const std::string& key) override;

  // The pool's summary; nullopt for a pool the loop has not (yet) applied.
  std::optional<ScrapeSummary> Summary(const std::string& key) const override;

 private:
  struct Inbox;  // what other threads hand the loop: pool changes and fetch answers
  struct Arrival;
  struct WorkerState {
    ScrapeTarget target;
    // Its token rate, watts and marginal joules per token, from its own page or its node's
    // exporter.
    WorkerReadings readings;
    std::uint64_t round = 0;  // of the fetch in flight, or of the last one
    // The round whose good page (without power series) waits for the exporter's; 0: none.
    std::uint64_t awaiting_exporter = 0;
    std::optional<Clock::TimePoint> exporter_taken;  // the exporter answer it last took
    bool in_flight = false;
    std::uint64_t fetch = 0;  // the fetch in flight, so a late answer of an old one is dropped
    Clock::TimePoint started;
    std::optional<routing::ScrapeMark> mark;
    std::shared_ptr<routing::PoolState> state;  // the state the mark is of
    bool ok = false;                            // the last scrape was good
    // Good scrapes in a row, up to kSteadyScrapes; a worker starts steady (its first good
    // scrape counts it available at once), and a failure sets it to 0.
    std::uint32_t good_in_a_row = kSteadyScrapes;
    std::uint64_t results = 0;  // scrapes finished
  };
  struct ExporterState {
    ExporterTarget target;
    bool in_flight = false;
    std::uint64_t fetch = 0;
    std::uint64_t round = 0;     // of the fetch in flight, or of the last one
    std::uint64_t answered = 0;  // the round of the last answer; 0: none yet
    bool ok = false;             // the last answer was a page with energy series
    std::map<std::string, signals::PodEnergy> pods;  // of the last good page, by pod key
    Clock::TimePoint at;                             // when it came back
  };
  struct PoolEntry {
    ScrapePool spec;
    std::shared_ptr<const PageMaps> maps;
    std::unordered_map<routing::WorkerKey, WorkerState> workers;
    std::map<std::string, ExporterState> exporters;  // by pod key
    Clock::TimePoint next_round;
    std::optional<Clock::TimePoint> last_round;
    std::uint64_t rounds = 0;
    std::uint64_t scrapes = 0;
  };

  void Run();
  void Apply(const std::string& key, std::optional<ScrapePool> pool, Clock::TimePoint now);
  void StartRound(const std::string& key, PoolEntry& pool, Clock::TimePoint now);
  void Finish(Arrival arrival);
  // An exporter's answer (Finish's, for an arrival of `pool`'s exporter).
  void FinishExporter(PoolEntry& pool, Arrival arrival) const;
  // Gives `w` the exporter's reading of the round its page waits for, once the exporter has
  // answered that round (or a later one).
  static void TakeExporterReading(WorkerState& w, const PoolEntry& pool);
  void Publish(const std::string& key, const PoolEntry& pool);

  const ScrapeFetchers fetchers_;
  const ScrapeLoopOptions options_;
  const Clock& clock_;
  Wakeup wake_;
  std::shared_ptr<Inbox> inbox_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::uint64_t fetches_ = 0;               // numbers fetches; the loop's thread only
  std::map<std::string, PoolEntry> pools_;  // the loop's thread only
  mutable std::mutex summary_mu_;
  std::map<std::string, ScrapeSummary> summaries_;  // guarded by summary_mu_
};

}  // namespace eoc::controller
