// bench_scrape_fetch: what one scrape round costs the controller with DirectFetcher: wall time for
// a round of fetches of fake vLLM workers' /metrics pages, and the CPU seconds the fetching process
// spends on it. The workers (FakeWorker, one loopback address each, 127.0.x.y) run in a child
// process, so the CPU measured (getrusage of this process) is the fetcher's alone; both share the
// machine's cores, as they would not in a cluster.
//   bench_scrape_fetch [--workers 250] [--fetches 1000] [--rounds 10] [--in-flight 64]
//                      [--threads 1] [--timeout-ms 2000] [--page FILE [--page-copies N]] [--out
//                      FILE]
// Each round fetches `fetches` pages, the workers taken in turn (fewer workers served many times).
// The fake's own vLLM page is small (about 1.3 KB); --page serves a captured one instead (such as
// ../shared/metrics-samples/vllm-v0.5-opt125m-full.prom, 13 KB), --page-copies N times over, for
// the size of a real V1 page with its histograms per model (tens to hundreds of KB).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "controller/scrape/direct_fetcher.h"
#include "fake_worker_child.h"

namespace {

using Seconds = std::chrono::duration<double>;
using eoc::bench::CpuSeconds;
using eoc::bench::Median;

struct Round {
  double wall = 0;
  double cpu = 0;
  std::size_t errors = 0;
  std::size_t bytes = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("bench_scrape_fetch: the cost of one round of DirectFetcher scrapes");
  int workers = 250;
  std::size_t fetches = 1000;
  int rounds = 10;
  std::size_t in_flight = 64;
  int threads = 1;
  int timeout_ms = 2000;
  std::string out_file;
  std::string page_file;
  int page_copies = 1;
  app.add_option("--workers", workers, "fake workers, one loopback address each")
      ->check(CLI::Range(1, 5000));
  app.add_option("--fetches", fetches, "fetches per round");
  app.add_option("--rounds", rounds, "rounds measured (after one to warm up)");
  app.add_option("--in-flight", in_flight, "DirectFetcherOptions::max_in_flight");
  app.add_option("--threads", threads, "DirectFetcherOptions::threads");
  app.add_option("--timeout-ms", timeout_ms, "each fetch's deadline");
  app.add_option("--page", page_file, "serve this captured metrics page instead of the fake's")
      ->check(CLI::ExistingFile);
  app.add_option("--page-copies", page_copies, "the page repeated this many times")
      ->check(CLI::Range(1, 1000));
  app.add_option("--out", out_file, "append the figures (markdown) to this file");
  CLI11_PARSE(app, argc, argv);

  std::string page;
  if (!page_file.empty()) {
    std::ifstream in(page_file);
    const std::string one((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (int i = 0; i < page_copies; ++i) page += one;
  }

  // Fork before any thread starts.
  const eoc::bench::WorkerChild child(workers, page);
  const std::vector<std::string>& endpoints = child.endpoints();
  if (endpoints.empty()) {
    std::cerr << "the workers did not start\n";
    return 1;
  }

  std::vector<eoc::controller::FetchRequest> requests;
  requests.reserve(fetches);
  for (std::size_t i = 0; i < fetches; ++i) {
    requests.push_back({.address = endpoints[i % endpoints.size()],
                        .timeout = std::chrono::milliseconds(timeout_ms)});
  }
  eoc::controller::DirectFetcher fetcher({.threads = threads, .max_in_flight = in_flight});
  std::vector<Round> measured;
  std::string first_error;
  for (int r = 0; r <= rounds; ++r) {
    Round round;
    const double cpu0 = CpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    eoc::controller::FetchAll(fetcher, requests,
                              [&](std::size_t, eoc::controller::FetchResult res) {
                                if (!res.ok()) {
                                  ++round.errors;
                                  if (first_error.empty()) first_error = res.error->message;
                                }
                                round.bytes += res.body.size();
                              });
    round.wall = Seconds(std::chrono::steady_clock::now() - t0).count();
    round.cpu = CpuSeconds() - cpu0;
    if (r > 0) measured.push_back(round);  // round 0 warms up
  }
  std::vector<double> walls;
  std::vector<double> cpus;
  std::size_t errors = 0;
  for (const Round& r : measured) {
    walls.push_back(r.wall);
    cpus.push_back(r.cpu);
    errors += r.errors;
  }
  const double page_bytes =
      measured.empty() ? 0
                       : static_cast<double>(measured.back().bytes) / static_cast<double>(fetches);
  std::ostringstream o;
  o << std::fixed << std::setprecision(3);
  o << "| workers (one loopback address each) | " << workers
    << (page_file.empty() ? " FakeWorkers (vLLM)"
                          : " servers of " + page_file + " x" + std::to_string(page_copies))
    << " |\n";
  o << "| fetches per round; rounds measured | " << fetches << "; " << rounds << " |\n";
  o << "| max in flight; I/O threads | " << in_flight << "; " << threads << " |\n";
  o << "| page size | " << std::setprecision(0) << page_bytes << " bytes |\n"
    << std::setprecision(3);
  o << "| wall time for one round (median, max) | " << Median(walls) * 1e3 << " ms, "
    << *std::max_element(walls.begin(), walls.end()) * 1e3 << " ms |\n";
  o << "| CPU seconds of the fetching process per round (median, max) | " << Median(cpus) << " s, "
    << *std::max_element(cpus.begin(), cpus.end()) << " s |\n";
  o << "| CPU per fetch (median round) | " << std::setprecision(1)
    << Median(cpus) / static_cast<double>(fetches) * 1e6 << " us |\n";
  o << "| share of one core at a round every 5 s | " << Median(cpus) / 5.0 * 100 << " % |\n";
  o << "| failed fetches | " << errors << (first_error.empty() ? "" : " (" + first_error + ")")
    << " |\n";
  std::cout << o.str();
  if (!out_file.empty()) std::ofstream(out_file, std::ios::app) << o.str();
  return errors == 0 ? 0 : 2;
}
