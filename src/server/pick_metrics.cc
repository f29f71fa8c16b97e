#include "server/pick_metrics.h"

#include <algorithm>
#include <utility>

#include "server/server.h"

namespace eoc::server {
namespace {

using Outcome = PickMetrics::Outcome;

constexpr std::array<std::string_view, PickMetrics::kOutcomes> kReasons = {
    "session-hit",     "session-new", "session-overflow",   "prefix",
    "strategy",        "queued",      "bad-request",        "unknown-pool",
    "unknown-model",   "too-large",   "queue-full",         "unavailable",
    "not-published",   "timed-out",   "shutting-down",      "waiting-full",
    "unauthenticated", "forbidden",   "access-unavailable", "caller-full",
};

// The status codes a pick answers, and one slot for any other.
constexpr std::array<int, 10> kCodes = {200, 204, 400, 401, 403, 404, 429, 503, 504, 0};

std::size_t CodeSlot(int code) {
  for (std::size_t i = 0; i + 1 < kCodes.size(); ++i) {
    if (kCodes[i] == code) return i;
  }
  return kCodes.size() - 1;
}

std::atomic<std::uint64_t> next_id{1};

void Bump(std::atomic<std::uint64_t>& cell, std::uint64_t by = 1) {
  // Only the owning thread writes a cell: a load and a store, no read-modify-write.
  cell.store(cell.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace

std::string_view PickMetrics::ReasonOf(Outcome outcome) {
  return kReasons[static_cast<std::size_t>(outcome)];
}

const std::vector<double>& PickMetrics::Buckets() {
  static const std::vector<double> buckets = {
      0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025,    0.05,    0.1,      0.25,    0.5,    1,       2.5,    5,     10,     30,    60};
  return buckets;
}

struct PickMetrics::Histogram {
  static constexpr std::size_t kSlots = 23;  // Buckets() and +Inf
  std::array<std::atomic<std::uint64_t>, kSlots> counts{};
  std::atomic<std::uint64_t> sum_ns{0};

  void Observe(std::chrono::nanoseconds took) {
    const double seconds = std::chrono::duration<double>(took).count();
    const auto& bounds = Buckets();
    const auto slot = static_cast<std::size_t>(
        std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
    Bump(counts[slot]);
    Bump(sum_ns, static_cast<std::uint64_t>(std::max<std::int64_t>(took.count(), 0)));
  }
};

struct PickMetrics::PoolCells {
  std::array<std::array<std::atomic<std::uint64_t>, kCodes.size()>, kOutcomes> picks{};
  Histogram duration;
  Histogram wait;
};

struct PickMetrics::ThreadCells {
  std::mutex mu;                                // taken to add a pool, and by Collect
  StringMap<std::unique_ptr<PoolCells>> pools;  // added to under mu; read by its thread without
};

PickMetrics::PickMetrics() : id_(next_id.fetch_add(1, std::memory_order_relaxed)) {}

PickMetrics::~PickMetrics() = default;

PickMetrics::ThreadCells& PickMetrics::Mine() {
  // This thread's cells of each PickMetrics it has counted into (one, outside tests). An object's
  // id is never reused, so an entry of one that is gone is never found again.
  thread_local std::vector<std::pair<std::uint64_t, std::shared_ptr<ThreadCells>>> mine;
  for (const auto& [id, cells] : mine) {
    if (id == id_) return *cells;
  }
  auto cells = std::make_shared<ThreadCells>();
  {
    const std::lock_guard lock(mu_);
    threads_.push_back(cells);
  }
  mine.emplace_back(id_, cells);
  return *cells;
}

PickMetrics::PoolCells& PickMetrics::CellsFor(std::string_view pool) {
  ThreadCells& thread = Mine();
  if (const auto it = thread.pools.find(pool); it != thread.pools.end()) return *it->second;
  const std::lock_guard lock(thread.mu);
  if (thread.pools.size() >= kMaxPoolSeries) {
    if (const auto it = thread.pools.find(std::string_view()); it != thread.pools.end()) {
      return *it->second;
    }
    pool = {};
  }
  return *thread.pools.emplace(std::string(pool), std::make_unique<PoolCells>()).first->second;
}

void PickMetrics::Record(std::string_view pool, Outcome outcome, int code,
                         std::chrono::nanoseconds took) {
  PoolCells& cells = CellsFor(pool);
  Bump(cells.picks[static_cast<std::size_t>(outcome)][CodeSlot(code)]);
  cells.duration.Observe(took);
}

void PickMetrics::RecordWait(std::string_view pool, std::chrono::nanoseconds waited) {
  CellsFor(pool).wait.Observe(waited);
}

namespace {

struct MergedHistogram {
  std::array<std::uint64_t, 23> counts{};
  std::uint64_t sum_ns = 0;
};

struct Merged {
  std::array<std::array<std::uint64_t, kCodes.size()>, PickMetrics::kOutcomes> picks{};
  MergedHistogram duration;
  MergedHistogram wait;
};

template <typename Cells>
void Add(MergedHistogram& into, const Cells& from) {
  for (std::size_t i = 0; i < into.counts.size(); ++i) {
    into.counts[i] += from.counts[i].load(std::memory_order_relaxed);
  }
  into.sum_ns += from.sum_ns.load(std::memory_order_relaxed);
}

prometheus::ClientMetric HistogramMetric(const std::string& pool, const MergedHistogram& h) {
  prometheus::ClientMetric metric;
  metric.label = {{"pool", pool}};
  std::uint64_t cumulative = 0;
  const auto& bounds = PickMetrics::Buckets();
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    cumulative += h.counts[i];
    metric.histogram.bucket.push_back({.cumulative_count = cumulative, .upper_bound = bounds[i]});
  }
  cumulative += h.counts[bounds.size()];
  metric.histogram.bucket.push_back(
      {.cumulative_count = cumulative, .upper_bound = std::numeric_limits<double>::infinity()});
  metric.histogram.sample_count = cumulative;
  metric.histogram.sample_sum = static_cast<double>(h.sum_ns) / 1e9;
  return metric;
}

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type) {
  return {.name = std::move(name), .help = std::move(help), .type = type, .metric = {}};
}

prometheus::ClientMetric PoolGauge(const std::string& pool, double value) {
  prometheus::ClientMetric metric;
  metric.label = {{"pool", pool}};
  metric.gauge.value = value;
  return metric;
}

}  // namespace

std::vector<prometheus::MetricFamily> PickMetrics::Collect(
    const routing::PoolDirectory* pools) const {
  std::vector<std::shared_ptr<ThreadCells>> threads;
  {
    const std::lock_guard lock(mu_);
    threads = threads_;
  }
  std::map<std::string, Merged> merged;  // sorted: a stable exposition
  for (const auto& thread : threads) {
    const std::lock_guard lock(thread->mu);
    for (const auto& [pool, cells] : thread->pools) {
      Merged& m = merged[pool];
      for (std::size_t o = 0; o < kOutcomes; ++o) {
        for (std::size_t c = 0; c < kCodes.size(); ++c) {
          m.picks[o][c] += cells->picks[o][c].load(std::memory_order_relaxed);
        }
      }
      Add(m.duration, cells->duration);
      Add(m.wait, cells->wait);
    }
  }

  auto picks = Family("eoc_picks_total",
                      "Picks answered, by reason (why this worker, or why none) and HTTP status.",
                      prometheus::MetricType::Counter);
  auto duration = Family("eoc_pick_duration_seconds",
                         "From a pick's dispatch to its answer, a wait in the queue included.",
                         prometheus::MetricType::Histogram);
  auto wait = Family("eoc_pick_queue_wait_seconds",
                     "How long picks that waited in their pool's queue waited.",
                     prometheus::MetricType::Histogram);
  for (const auto& [pool, m] : merged) {
    for (std::size_t o = 0; o < kOutcomes; ++o) {
      for (std::size_t c = 0; c < kCodes.size(); ++c) {
        if (m.picks[o][c] == 0) continue;
        prometheus::ClientMetric metric;
        metric.label = {{"code", kCodes[c] == 0 ? "other" : std::to_string(kCodes[c])},
                        {"pool", pool},
                        {"reason", std::string(kReasons[o])}};
        metric.counter.value = static_cast<double>(m.picks[o][c]);
        picks.metric.push_back(std::move(metric));
      }
    }
    duration.metric.push_back(HistogramMetric(pool, m.duration));
    wait.metric.push_back(HistogramMetric(pool, m.wait));
  }

  auto depth = Family("eoc_pick_queue_depth", "Picks waiting in the pool's queue now.",
                      prometheus::MetricType::Gauge);
  auto sessions = Family("eoc_sessions", "Session bindings this replica holds for the pool.",
                         prometheus::MetricType::Gauge);
  auto evictions = Family("eoc_session_evictions_total",
                          "Session bindings pushed out by maxSessions or --max-sessions-total.",
                          prometheus::MetricType::Counter);
  auto blocks = Family("eoc_prefix_index_blocks",
                       "Prompt-prefix blocks this replica's index holds for the pool.",
                       prometheus::MetricType::Gauge);
  if (pools != nullptr) {
    for (const std::string& key : pools->Keys()) {
      const auto state = pools->Find(key);
      if (state == nullptr) continue;
      depth.metric.push_back(PoolGauge(key, static_cast<double>(state->Waiting())));
      const auto table = state->sessions();
      sessions.metric.push_back(PoolGauge(key, table ? static_cast<double>(table->Size()) : 0.0));
      prometheus::ClientMetric evicted = PoolGauge(key, 0);
      evicted.counter.value = static_cast<double>(state->SessionEvictions());
      evictions.metric.push_back(std::move(evicted));
      const auto index = state->prefix_index();
      blocks.metric.push_back(PoolGauge(key, index ? static_cast<double>(index->Size()) : 0.0));
    }
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto* family : {&picks, &duration, &wait, &depth, &sessions, &evictions, &blocks}) {
    if (!family->metric.empty()) out.push_back(std::move(*family));
  }
  return out;
}

namespace {

// A family of one series without labels.
prometheus::MetricFamily OneSeries(std::string name, std::string help, prometheus::MetricType type,
                                   double value) {
  auto family = Family(std::move(name), std::move(help), type);
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
  return family;
}

}  // namespace

std::vector<prometheus::MetricFamily> PickConnectionMetrics(const HttpServer& server) {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  out.push_back(OneSeries("eoc_pick_connections", "Connections open to the pick endpoint now.",
                          MetricType::Gauge, static_cast<double>(server.open_connections())));
  out.push_back(OneSeries("eoc_pick_connections_evicted_total",
                          "Connections closed at --pick-max-connections to admit a new one (the "
                          "longest idle or stalled).",
                          MetricType::Counter, static_cast<double>(server.evicted_connections())));
  out.push_back(OneSeries("eoc_pick_tls_handshake_failures_total",
                          "TLS handshakes with the pick endpoint that did not complete (refused, "
                          "malformed, timed out or cut), and client certificates past the bounds.",
                          MetricType::Counter, static_cast<double>(server.handshake_failures())));
  out.push_back(OneSeries("eoc_pick_requests_shed_total",
                          "Pick requests answered 503 because their bodies would have passed "
                          "--pick-max-body-bytes-in-flight.",
                          MetricType::Counter, static_cast<double>(server.shed_requests())));
  out.push_back(OneSeries("eoc_pick_body_bytes", "Bytes of pick request bodies held now.",
                          MetricType::Gauge, static_cast<double>(server.body_bytes_in_flight())));
  return out;
}

}  // namespace eoc::server
