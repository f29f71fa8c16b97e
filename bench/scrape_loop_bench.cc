// bench_scrape_loop: what the scrape loop costs one replica for one pool of many workers, on the
// real clock: the real ScrapeLoop with a real DirectFetcher, a real PoolDirectory holding the
// pool's routing PoolState (a LeastBusy snapshot of the workers) and real ScrapeMetrics on a
// telemetry registry, over one vLLM pool. Reported:
//   - CPU seconds of this process per interval (getrusage, user + system, from one round's start to
//     the next), less those of the main thread, which only watches: fetching, parsing, token
//     rates, ObserveLoad and the gauges, the whole loop;
//   - whether the interval was kept: how late each round started against the fixed-rate schedule
//     from the moment the pool was handed over (SetPool: a new pool's first round starts at once),
//     and how long each took until every worker had an answer (the main thread polls
//     ScrapeLoop::Summary every --poll-ms, so both are late by up to a poll, or more when the
//     machine is busy: upper bounds);
//   - heap per scraped worker (glibc mallinfo2: uordblks + hblkhd, every arena) before the pool's
//     routing state exists, once it does, and after the rounds, divided by workers.
// The workers run in a child process (fake_worker_child.h), so their CPU is not counted; they share
// the machine's cores with the loop, as they would not in a cluster.
//   bench_scrape_loop [--workers 1000] [--rounds 10] [--interval 5] [--timeout 2] [--in-flight 64]
//                     [--page FILE] [--poll-ms 2] [--out FILE]
// One round warms up (first connections, no token rate yet); the next --rounds are measured.
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "controller/scrape/direct_fetcher.h"
#include "controller/scrape_loop.h"
#include "controller/scrape_metrics.h"
#include "controller/scrape_pool.h"
#include "fake_worker_child.h"
#include "routing/ids.h"
#include "routing/pool_directory.h"
#include "routing/pool_snapshot.h"
#include "telemetry/logging.h"
#include "telemetry/metrics.h"

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

// Heap in use, every arena: small chunks (uordblks) and mmapped ones (hblkhd).
double HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd);
}

// Resident set size, for comparison (it also holds freed memory glibc keeps, and stacks).
double RssBytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0;
  std::size_t resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// CPU seconds of every thread but this one (the main thread, which only polls).
double LoopCpuSeconds() {
  return eoc::bench::CpuSeconds(RUSAGE_SELF) - eoc::bench::CpuSeconds(RUSAGE_THREAD);
}

struct Round {
  Clock::time_point start;                // when the poll first saw it started
  double cpu = 0;                         // LoopCpuSeconds() then
  std::optional<Clock::time_point> done;  // when every worker of it had an answer
  std::size_t ok = 0;                     // Summary().ok then
};

double Max(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("bench_scrape_loop: the scrape loop's CPU, timing and memory for one pool");
  int workers = 1000;
  int rounds = 10;
  int interval_s = 5;
  int timeout_s = 2;
  std::size_t in_flight = 64;
  int poll_ms = 2;
  std::string page_file;
  std::string out_file;
  app.add_option("--workers", workers, "fake workers, one loopback address each")
      ->check(CLI::Range(1, 5000));
  app.add_option("--rounds", rounds, "rounds measured (after one to warm up)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--interval", interval_s, "spec.metrics.intervalSeconds")
      ->check(CLI::Range(1, 3600));
  app.add_option("--timeout", timeout_s, "spec.metrics.timeoutSeconds")->check(CLI::Range(1, 3600));
  app.add_option("--in-flight", in_flight,
                 "DirectFetcherOptions::max_in_flight (the controller's "
                 "--scrape-max-in-flight)");
  app.add_option("--page", page_file, "serve this captured metrics page instead of the fake's")
      ->check(CLI::ExistingFile);
  app.add_option("--poll-ms", poll_ms, "how often the main thread reads the loop's summary")
      ->check(CLI::Range(1, 1000));
  app.add_option("--out", out_file, "append the figures (markdown) to this file");
  CLI11_PARSE(app, argc, argv);

  std::string page;
  if (!page_file.empty()) {
    std::ifstream in(page_file);
    page.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // Fork before any thread starts.
  const eoc::bench::WorkerChild child(workers, page);
  const std::vector<std::string>& endpoints = child.endpoints();
  if (endpoints.empty()) {
    std::cerr << "the workers did not start\n";
    return 1;
  }
  eoc::telemetry::SetLogLevel(eoc::telemetry::LogLevel::kWarn);

  const std::string key = "bench/pool";
  const auto n = static_cast<std::size_t>(workers);
  const auto pod = [](int i) { return "bench/w-" + std::to_string(i); };
  eoc::controller::DirectFetcher fetcher({.max_in_flight = in_flight});
  eoc::routing::SessionBudget budget(4'000'000);
  eoc::routing::PrefixBudget prefix_budget;
  eoc::routing::PoolDirectory directory(budget, prefix_budget);
  eoc::telemetry::Metrics metrics;
  eoc::controller::ScrapeMetrics scrape_metrics(metrics.registry());
  eoc::controller::ScrapeLoop loop({.direct = &fetcher},
                                   {.directory = &directory, .metrics = &scrape_metrics},
                                   eoc::RealClock());
  loop.Start();

  const double heap0 = HeapBytes();
  const double rss0 = RssBytes();
  {
    std::vector<eoc::routing::Worker> routing_workers;
    routing_workers.reserve(n);
    for (int i = 0; i < workers; ++i) {
      routing_workers.push_back({.key = eoc::routing::WorkerKeyOf(pod(i)),
                                 .pod = pod(i),
                                 .address = eoc::bench::WorkerIp(i) + ":8000",
                                 .capability = {.max_concurrency = 256},
                                 .weight = 1000});
    }
    const auto state = directory.Configure(key, {}, Clock::now());
    state->SetSnapshot(
        eoc::routing::PoolSnapshot::Build(std::move(routing_workers), 1, eoc::Strategy::kLeastBusy),
        Clock::now());
  }
  const double heap1 = HeapBytes();
  Clock::time_point set_at;
  {
    eoc::controller::ScrapePool pool{.key = key,
                                     .engine = eoc::api::Engine::kVllm,
                                     .interval = std::chrono::seconds(interval_s),
                                     .timeout = std::chrono::seconds(timeout_s)};
    for (int i = 0; i < workers; ++i) {
      pool.targets.push_back({.key = eoc::routing::WorkerKeyOf(pod(i)),
                              .pod = pod(i),
                              .address = endpoints[static_cast<std::size_t>(i)],
                              .max_concurrency = 256});
    }
    std::sort(pool.targets.begin(), pool.targets.end(),
              [](const auto& a, const auto& b) { return a.pod < b.pod; });
    // The schedule's origin: the loop starts a new pool's first round at once.
    set_at = Clock::now();
    loop.SetPool(std::move(pool));
  }

  // Watch: rounds 1 (warm-up) to rounds + 1 measured to completion, and the start of the next,
  // which ends the last measured interval. Round r is done when r x workers scrapes have finished:
  // this assumes every worker is fetched every round (none still out when the next comes), which
  // holds while rounds end well within the interval, as the figures show.
  const auto total = static_cast<std::size_t>(rounds) + 2;
  std::vector<Round> seen;
  std::optional<double> heap2;
  double rss2 = 0;
  const auto give_up = Clock::now() + std::chrono::seconds(interval_s) * (rounds + 4) +
                       std::chrono::seconds(timeout_s) * 2;
  while (Clock::now() < give_up) {
    const std::optional<eoc::controller::ScrapeSummary> s = loop.Summary(key);
    const Clock::time_point now = Clock::now();
    if (s) {
      while (seen.size() < s->rounds && seen.size() < total) {
        seen.push_back({.start = now, .cpu = LoopCpuSeconds()});
      }
      for (std::size_t r = 0; r < seen.size(); ++r) {
        if (!seen[r].done && s->scrapes >= (r + 1) * n) {
          seen[r].done = now;
          seen[r].ok = s->ok;
        }
      }
      if (!heap2 && seen.size() == total - 1 && seen.back().done) {  // quiet: the last round done
        heap2 = HeapBytes();
        rss2 = RssBytes();
      }
      if (seen.size() == total) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  loop.Stop();
  if (seen.size() < total || !heap2) {
    std::cerr << "the rounds did not all come within " << (rounds + 4) * interval_s << " s ("
              << seen.size() << " of " << total << " started)\n";
    return 2;
  }

  const double interval = interval_s;
  std::vector<double> cpu;       // per measured interval
  std::vector<double> lag;       // start behind schedule, measured rounds
  std::vector<double> duration;  // start to every answer, measured rounds
  std::size_t min_ok = n;
  for (std::size_t r = 1; r + 1 < total; ++r) {
    cpu.push_back(seen[r + 1].cpu - seen[r].cpu);
    lag.push_back(Seconds(seen[r].start - set_at).count() - interval * static_cast<double>(r));
    duration.push_back(Seconds(*seen[r].done - seen[r].start).count());
    min_ok = std::min(min_ok, seen[r].ok);
  }
  const double first = Seconds(*seen[0].done - seen[0].start).count();
  const double cpu_all = (seen[total - 1].cpu - seen[1].cpu) / static_cast<double>(rounds);
  const double per_worker = 1.0 / static_cast<double>(n);

  std::ostringstream o;
  o << std::fixed << std::setprecision(3);
  const std::string served =
      page_file.empty() ? " FakeWorkers (their own page)" : " servers of " + page_file;
  o << "| pool | 1, engine vLLM, " << workers << served << " |\n";
  o << "| interval; timeout; max in flight; rounds measured | " << interval_s << " s; " << timeout_s
    << " s; " << in_flight << "; " << rounds << " (after 1 to warm up) |\n";
  o << "| CPU seconds of the loop per interval (all rounds / rounds; median, max) | " << cpu_all
    << " s; " << eoc::bench::Median(cpu) << " s, " << Max(cpu) << " s |\n";
  o << std::setprecision(1);
  o << "| share of one core | " << cpu_all / interval * 100 << " % (max interval "
    << Max(cpu) / interval * 100 << " %) |\n";
  o << "| round start behind schedule from SetPool (median, worst) | "
    << eoc::bench::Median(lag) * 1e3 << " ms, " << Max(lag) * 1e3 << " ms (poll every " << poll_ms
    << " ms) |\n";
  o << "| round start to every answer (median, longest; first round) | "
    << eoc::bench::Median(duration) * 1e3 << " ms, " << Max(duration) * 1e3 << " ms; "
    << first * 1e3 << " ms |\n";
  o << "| longest round / interval | " << Max(duration) / interval * 100 << " % |\n";
  o << "| workers scraped ok at a round's end (fewest) | " << min_ok << " of " << n << " |\n";
  o << std::setprecision(2);
  o << "| heap before the pool; with its PoolState; after the rounds | " << heap0 / 1e6 << " MB; "
    << heap1 / 1e6 << " MB; " << *heap2 / 1e6 << " MB |\n";
  o << std::setprecision(0);
  o << "| heap per worker: routing PoolState + snapshot; scrape loop + series; both | "
    << (heap1 - heap0) * per_worker << " B; " << (*heap2 - heap1) * per_worker << " B; "
    << (*heap2 - heap0) * per_worker << " B |\n";
  o << "| RSS per worker, before the pool to after the rounds | " << (rss2 - rss0) * per_worker
    << " B |\n";
  std::cout << o.str();
  if (!out_file.empty()) std::ofstream(out_file, std::ios::app) << o.str();
  return 0;
}
