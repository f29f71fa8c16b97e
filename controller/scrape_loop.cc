#include "controller/scrape_loop.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "telemetry/logging.h"

namespace eoc::controller {
namespace {

const telemetry::Logger& Log() {
  static const telemetry::Logger log("scrape");
  return log;
}

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// The entry of `key` whose fetch `fetch` is in flight, now no longer; nullptr when the entry left
// (or left and came back) meanwhile.
template <class Map>
typename Map::mapped_type* Answered(Map& entries, const typename Map::key_type& key,
                                    std::uint64_t fetch) {
  const auto found = entries.find(key);
  if (found == entries.end() || found->second.fetch != fetch || !found->second.in_flight) {
    return nullptr;
  }
  found->second.in_flight = false;
  return &found->second;
}

}  // namespace

struct ScrapeLoop::Arrival {
  std::string pool;
  std::string exporter;  // the exporter's pod key; "" for a worker's page
  routing::WorkerKey worker = 0;
  std::uint64_t fetch = 0;
  FetchResult result;
  Clock::TimePoint at;
};

// Shared with the fetchers' callbacks, which may outlive the loop: once closed, what they bring
// is dropped.
struct ScrapeLoop::Inbox {
  explicit Inbox(Wakeup& w, const Clock& c) : wake(&w), clock(&c) {}

  void Change(const std::string& key, std::optional<ScrapePool> pool) {
    const std::lock_guard lock(mu);
    if (closed) return;
    changes.insert_or_assign(key, std::move(pool));
    wake->Notify();
  }
  void Arrive(Arrival arrival) {
    const std::lock_guard lock(mu);
    if (closed) return;
    arrival.at = clock->Now();
    arrivals.push_back(std::move(arrival));
    wake->Notify();
  }
  void Close() {
    const std::lock_guard lock(mu);
    closed = true;
    wake = nullptr;
    changes.clear();
    arrivals.clear();
  }

  std::mutex mu;
  bool closed = false;                                       // guarded by mu
  Wakeup* wake;                                              // guarded by mu; null once closed
  const Clock* const clock;                                  // read only while open
  std::map<std::string, std::optional<ScrapePool>> changes;  // the latest per pool; by mu
  std::vector<Arrival> arrivals;  // at most one per worker in flight; guarded by mu
};

ScrapeLoop::ScrapeLoop(ScrapeFetchers fetchers, ScrapeLoopOptions options, const Clock& clock)
    : fetchers_(fetchers),
      options_(options),
      clock_(clock),
      wake_(clock),
      inbox_(std::make_shared<Inbox>(wake_, clock)) {}

ScrapeLoop::~ScrapeLoop() { Stop(); }

void ScrapeLoop::Start() {
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
}

void ScrapeLoop::Stop() {
  stopping_ = true;
  wake_.Notify();
  if (thread_.joinable()) thread_.join();
  inbox_->Close();
}

void ScrapeLoop::SetPool(ScrapePool pool) {
  const std::string key = pool.key;
  inbox_->Change(key, std::move(pool));
}

void ScrapeLoop::RemovePool(const std::string& key) { inbox_->Change(key, std::nullopt); }

std::optional<ScrapeSummary> ScrapeLoop::Summary(const std::string& key) const {
  const std::lock_guard lock(summary_mu_);
  const auto it = summaries_.find(key);
  if (it == summaries_.end()) return std::nullopt;
  return it->second;
}

void ScrapeLoop::Run() {
  while (!stopping_) {
    const Wakeup::Ticket ticket = wake_.TakeTicket();
    std::map<std::string, std::optional<ScrapePool>> changes;
    std::vector<Arrival> arrivals;
    {
      const std::lock_guard lock(inbox_->mu);
      changes.swap(inbox_->changes);
      arrivals.swap(inbox_->arrivals);
    }
    for (auto& [key, pool] : changes) Apply(key, std::move(pool), clock_.Now());
    for (Arrival& arrival : arrivals) Finish(std::move(arrival));
    const Clock::TimePoint now = clock_.Now();
    Clock::TimePoint next = Clock::TimePoint::max();
    for (auto& [key, pool] : pools_) {
      if (stopping_) return;
      if (pool.next_round <= now) StartRound(key, pool, now);
      next = std::min(next, pool.next_round);
    }
    wake_.SleepUntilNotified(next, ticket);
  }
}

void ScrapeLoop::Apply(const std::string& key, std::optional<ScrapePool> pool,
                       Clock::TimePoint now) {
  if (!pool) {
    if (pools_.erase(key) > 0 && options_.metrics != nullptr) options_.metrics->RemovePool(key);
    const std::lock_guard lock(summary_mu_);
    summaries_.erase(key);
    return;
  }
  auto [it, added] = pools_.try_emplace(key);
  PoolEntry& entry = it->second;
  if (!added && entry.spec == *pool) return;
  entry.maps = std::make_shared<const PageMaps>(
      PageMapsOf(EngineMapOf(pool->engine, pool->generic_names), pool->energy_source));
  std::unordered_map<routing::WorkerKey, WorkerState> workers;
  workers.reserve(pool->targets.size());
  for (const ScrapeTarget& target : pool->targets) {
    auto old = entry.workers.find(target.key);
    const bool known = old != entry.workers.end();
    WorkerState state;
    if (known) {
      state = std::move(old->second);
      entry.workers.erase(old);
    }
    // A new worker, or a new profile (the slope's bounds): its energy starts afresh.
    if (!known || state.target.profile != target.profile) {
      state.readings.energy = signals::WorkerEnergy(target.profile);
    } else if (state.target.exporter != target.exporter) {
      state.readings.energy.Miss();  // another exporter's counter
      state.awaiting_exporter = 0;
      state.exporter_taken.reset();
    }
    state.target = target;
    workers.insert_or_assign(target.key, std::move(state));
  }
  for (const auto& [worker, gone] : entry.workers) {  // left the pool: their state and series go
    if (options_.metrics != nullptr) options_.metrics->RemoveWorker(key, gone.target.pod);
  }
  entry.workers = std::move(workers);
  std::map<std::string, ExporterState> exporters;
  for (const ExporterTarget& target : pool->exporters) {
    auto old = entry.exporters.find(target.pod);
    ExporterState state;
    if (old != entry.exporters.end() && old->second.target == target) {
      state = std::move(old->second);
    }
    state.target = target;
    exporters.insert_or_assign(target.pod, std::move(state));
  }
  entry.exporters = std::move(exporters);
  if (added) {
    entry.next_round = now;  // a new pool is scraped at once
  } else if (entry.spec.interval != pool->interval) {
    entry.next_round = entry.last_round ? *entry.last_round + pool->interval : now;
  }
  entry.spec = std::move(*pool);
  Publish(key, entry);
}

void ScrapeLoop::StartRound(const std::string& key, PoolEntry& pool, Clock::TimePoint now) {
  ++pool.rounds;
  pool.last_round = now;
  const Clock::TimePoint due = pool.next_round + pool.spec.interval;
  pool.next_round = due > now ? due : now + pool.spec.interval;  // late: no catching up
  MetricsFetcher* const fetcher =
      pool.spec.access == api::MetricsAccess::kApiServerProxy ? fetchers_.proxy : fetchers_.direct;
  const std::shared_ptr<routing::PoolState> state =
      options_.directory != nullptr ? options_.directory->Find(key) : nullptr;
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::min(pool.spec.timeout, pool.spec.interval));
  // The callback that queues a fetch's answer for the loop as `arrival`.
  const auto arrive = [this](Arrival arrival) -> MetricsFetcher::Callback {
    return [inbox = inbox_, arrival = std::move(arrival)](FetchResult result) mutable {
      arrival.result = std::move(result);
      inbox->Arrive(std::move(arrival));
    };
  };
  std::vector<std::pair<FetchRequest, MetricsFetcher::Callback>> fetches;
  fetches.reserve(pool.workers.size() + pool.exporters.size());
  for (auto& [worker, w] : pool.workers) {
    if (w.in_flight) continue;  // the last round's fetch is still out: not twice at once
    w.in_flight = true;
    w.fetch = ++fetches_;
    w.round = pool.rounds;
    w.started = now;
    w.state = state;
    w.mark = state != nullptr ? state->MarkScrape(worker) : std::nullopt;
    fetches.emplace_back(FetchRequest{.pod = w.target.pod,
                                      .address = w.target.address,
                                      .path = pool.spec.path,
                                      .timeout = timeout},
                         arrive({.pool = key, .worker = worker, .fetch = w.fetch}));
  }
  for (auto& [pod, e] : pool.exporters) {
    if (e.in_flight || pool.maps->energy.empty()) continue;  // Static: nothing to read there
    e.in_flight = true;
    e.fetch = ++fetches_;
    e.round = pool.rounds;
    fetches.emplace_back(FetchRequest{.pod = e.target.pod,
                                      .address = e.target.address,
                                      .path = pool.spec.exporter_path,
                                      .timeout = timeout},
                         arrive({.pool = key, .exporter = pod, .fetch = e.fetch}));
  }
  Publish(key, pool);
  for (auto& [request, done] : fetches) {
    if (fetcher != nullptr) {
      fetcher->Fetch(std::move(request), std::move(done));
    } else {
      Deliver(done, FetchResult{.error = FetchError{
                                    .kind = FetchErrorKind::kTransport,
                                    .message = "no fetcher for spec.metrics.access " +
                                               std::string(api::ToString(pool.spec.access))}});
    }
  }
}

void ScrapeLoop::Finish(Arrival arrival) {
  const auto p = pools_.find(arrival.pool);
  if (p == pools_.end()) return;
  PoolEntry& pool = p->second;
  if (!arrival.exporter.empty()) {
    FinishExporter(pool, std::move(arrival));
    return;
  }
  WorkerState* const answered = Answered(pool.workers, arrival.worker, arrival.fetch);
  if (answered == nullptr) return;
  WorkerState& w = *answered;
  const ScrapeReading reading = ReadScrape(arrival.result, *pool.maps, w.target.pod);
  const bool ok = reading.result == ScrapeResult::kOk;
  routing::Load load;  // unavailable
  if (ok) {
    load = ObserveGoodScrape(reading, arrival.at, w.target.grid_g_per_kwh, w.readings);
    w.awaiting_exporter = 0;
    if (!reading.energy) {
      if (!w.target.exporter.empty()) {
        w.awaiting_exporter = w.round;
        TakeExporterReading(w, pool);
      } else {
        w.readings.energy.Miss();
      }
      load.marginal_joules_per_token = w.readings.energy.marginal().joules_per_token();
    }
  } else {
    w.readings.energy.Miss();
    w.awaiting_exporter = 0;
  }
  const std::shared_ptr<routing::PoolState> state =
      options_.directory != nullptr ? options_.directory->Find(arrival.pool) : nullptr;
  if (state != nullptr) {
    if (w.mark && w.state == state) {
      state->ObserveLoad(arrival.worker, load, arrival.at, *w.mark);
    } else {  // the mark is of another state (the pool was re-added), or there was none
      state->ObserveLoad(arrival.worker, load, arrival.at);
    }
  }
  w.mark.reset();
  w.state.reset();
  if (ok != w.ok || (!ok && w.results == 0)) {  // logged as it changes
    if (ok) {
      Log().Info("scraping again", {{"pool", arrival.pool}, {"pod", w.target.pod}});
    } else {
      Log().Warn("scrape failed", {{"pool", arrival.pool},
                                   {"pod", w.target.pod},
                                   {"result", std::string(ResultName(reading.result))},
                                   {"error", reading.message}});
    }
  }
  w.ok = ok;
  w.good_in_a_row = ok ? std::min(w.good_in_a_row + 1, kSteadyScrapes) : 0;
  ++w.results;
  ++pool.scrapes;
  if (options_.metrics != nullptr) {
    options_.metrics->Scraped(arrival.pool, reading.result, Seconds(arrival.at - w.started));
    if (ok) {
      options_.metrics->SetWorker(
          arrival.pool, w.target.pod,
          {.busyness = routing::Busyness(load, 0, w.target.max_concurrency),
           .running = load.running,
           .waiting = load.waiting,
           .kv_cache_usage = load.kv_cache_usage,
           .tokens_per_second = load.tokens_per_second,
           .watts = w.readings.energy.watts(),
           .watts_source = w.readings.energy.source(),
           .marginal_joules_per_token = routing::MarginalJoulesPerToken(load, w.target.profile),
           .marginal_measured = load.marginal_joules_per_token > 0,
           .grams_per_token = routing::MarginalGramsPerToken(load, w.target.profile)});
    } else {
      options_.metrics->RemoveWorker(arrival.pool, w.target.pod);
    }
  }
  Publish(arrival.pool, pool);
}

void ScrapeLoop::FinishExporter(PoolEntry& pool, Arrival arrival) const {
  ExporterState* const answered = Answered(pool.exporters, arrival.exporter, arrival.fetch);
  if (answered == nullptr) return;
  ExporterState& e = *answered;
  ExporterReading reading = ReadExporterPage(arrival.result, *pool.maps);
  const bool ok = reading.result == ScrapeResult::kOk;
  if (options_.metrics != nullptr) options_.metrics->ExporterScraped(arrival.pool, reading.result);
  if (ok != e.ok || (!ok && e.answered == 0)) {  // logged as it changes
    if (ok) {
      Log().Info("scraping energy exporter", {{"pool", arrival.pool},
                                              {"exporter", arrival.exporter},
                                              {"pods", std::to_string(reading.pods.size())}});
    } else {
      Log().Warn("energy exporter scrape failed",
                 {{"pool", arrival.pool},
                  {"exporter", arrival.exporter},
                  {"result", std::string(ResultName(reading.result))},
                  {"error", reading.message}});
    }
  }
  if (reading.truncated && !e.ok) {
    Log().Warn("energy exporter page lists too many pods: the rest are dropped",
               {{"pool", arrival.pool},
                {"exporter", arrival.exporter},
                {"max", std::to_string(signals::EnergyMap::kMaxPods)}});
  }
  e.ok = ok;
  e.pods = ok ? std::move(reading.pods) : std::map<std::string, signals::PodEnergy>{};
  e.at = arrival.at;
  e.answered = e.round;
  for (auto& [key, w] : pool.workers) {
    if (w.target.exporter == arrival.exporter) TakeExporterReading(w, pool);
  }
}

void ScrapeLoop::TakeExporterReading(WorkerState& w, const PoolEntry& pool) {
  if (w.awaiting_exporter == 0) return;
  const auto found = pool.exporters.find(w.target.exporter);
  if (found == pool.exporters.end()) {  // not among the pool's exporters: cannot happen
    w.awaiting_exporter = 0;
    w.readings.energy.Miss();
    return;
  }
  const ExporterState& e = found->second;
  // Not yet answered for this round, or this answer is taken already (it answered a later round
  // before this worker's page of an earlier one came back).
  if (e.answered < w.awaiting_exporter || w.exporter_taken == e.at) return;
  w.awaiting_exporter = 0;
  w.exporter_taken = e.at;
  const auto pod = e.pods.find(w.target.pod);
  if (e.ok && pod != e.pods.end()) {
    w.readings.energy.Observe(e.at, pod->second, w.readings.tokens_per_second);
  } else {
    w.readings.energy.Miss();
  }
}

void ScrapeLoop::Publish(const std::string& key, const PoolEntry& pool) {
  ScrapeSummary summary{
      .total = pool.workers.size(), .rounds = pool.rounds, .scrapes = pool.scrapes};
  for (const auto& [worker, w] : pool.workers) {
    summary.ok += w.ok ? 1 : 0;
    summary.recovering += w.ok && w.good_in_a_row < kSteadyScrapes ? 1 : 0;
  }
  const std::lock_guard lock(summary_mu_);
  summaries_.insert_or_assign(key, summary);
}

}  // namespace eoc::controller
