// bench_pick_server: the pick endpoint alone, for bench/pick (wrk against it and against nginx):
// the server of eoc-controller with the PickEndpoint over a pool directory of one pool,
// "bench/chat", of --workers fake workers (JouleWeighted, session and prefix affinity on), whose
// loads a thread refreshes every 100 ms as the scrape loop would (so the KV budget never runs
// out). No cluster. Runs until SIGTERM or SIGINT. The workers' addresses are made up unless
// --worker-port names the first of their ports on 127.0.0.1 (bench/gateway proxies to them).
// With --pick-tls-cert-file and --pick-tls-key-file it serves https, as eoc-controller does with
// the same flags, and with --pick-client-ca-file it requires a client certificate that chains to
// it (eoc-controller's default with that flag); who may pick is not checked (--pick-auth none).
//
//   bench_pick_server --port 18190 --threads 1 --workers 10 [--worker-port 18201]
//     [--pick-tls-cert-file F --pick-tls-key-file F [--pick-client-ca-file F]]
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/stop_signals.h"
#include "routing/pool_directory.h"
#include "routing/pool_snapshot.h"
#include "server/pick_endpoint.h"
#include "server/pick_metrics.h"
#include "server/pick_pools.h"
#include "server/pool_ticker.h"
#include "server/server.h"

int main(int argc, char** argv) {
  CLI::App app{"bench_pick_server: the pick endpoint over one in-memory pool"};
  int port = 18190;
  int threads = 1;
  int workers = 10;
  int worker_port = 0;
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  app.add_option("--port", port, "port on 127.0.0.1")->capture_default_str();
  app.add_option("--threads", threads, "I/O threads")->capture_default_str();
  app.add_option("--workers", workers, "workers of the pool")->capture_default_str();
  app.add_option("--worker-port", worker_port,
                 "the first worker's port on 127.0.0.1, the others' following it (default: "
                 "addresses no one listens on)");
  app.add_option("--pick-tls-cert-file", cert_file, "PEM certificate to serve https with");
  app.add_option("--pick-tls-key-file", key_file, "PEM private key of --pick-tls-cert-file");
  app.add_option("--pick-client-ca-file", client_ca_file,
                 "PEM CA certificates that client certificates must chain to (required)");
  CLI11_PARSE(app, argc, argv);
  std::optional<eoc::server::TlsFiles> tls;
  if (!cert_file.empty() || !key_file.empty() || !client_ca_file.empty()) {
    tls = eoc::server::TlsFiles{.cert_file = cert_file,
                                .key_file = key_file,
                                .client_ca_file = client_ca_file,
                                .client_certs = client_ca_file.empty()
                                                    ? eoc::server::ClientCerts::kNone
                                                    : eoc::server::ClientCerts::kRequire};
  }

  const eoc::Clock& clock = eoc::RealClock();
  eoc::routing::SessionBudget budget(4'000'000);
  eoc::routing::PrefixBudget prefix_budget;
  eoc::routing::PoolDirectory directory(budget, prefix_budget);
  const auto pool = directory.Configure("bench/chat", {}, clock.Now());
  eoc::server::PickPools pools;
  pools.Set("bench/chat", pool, {});
  std::vector<eoc::routing::Worker> list;
  for (int i = 0; i < workers; ++i) {
    eoc::routing::Worker w;
    w.pod = "bench/vllm-" + std::to_string(i);
    w.key = eoc::routing::WorkerKeyOf(w.pod);
    w.address = worker_port > 0 ? "127.0.0.1:" + std::to_string(worker_port + i)
                                : "10.0." + std::to_string(i / 250) + "." +
                                      std::to_string(i % 250 + 1) + ":8000";
    w.weight = 1000 - (i % 5) * 100;
    list.push_back(std::move(w));
  }
  pool->SetSnapshot(
      eoc::routing::PoolSnapshot::Build(list, 1, eoc::routing::Strategy::kJouleWeighted),
      clock.Now());

  std::atomic<bool> stopping{false};
  std::thread scrapes([&] {
    while (!stopping.load()) {
      for (const auto& w : list) {
        pool->ObserveLoad(w.key,
                          {.running = 4,
                           .kv_blocks_total = 1'000'000,
                           .kv_blocks_free = 1'000'000,
                           .block_size = 16,
                           .available = true},
                          clock.Now());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  eoc::server::PickMetrics metrics;
  const eoc::server::PickEndpoint endpoint(pools, metrics, clock);
  eoc::server::PoolTicker ticker(directory, clock);
  ticker.Start();
  eoc::server::HttpServer server({.address = "127.0.0.1:" + std::to_string(port),
                                  .threads = threads,
                                  .max_header_bytes = std::size_t{16} * 1024,
                                  .max_connections = 4096,
                                  .tls = std::move(tls)});
  endpoint.Register(server);
  server.Start();
  eoc::WaitForStopSignal();
  server.Stop();
  ticker.Stop();
  stopping.store(true);
  scrapes.join();
  return 0;
}
