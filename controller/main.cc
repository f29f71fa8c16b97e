// eoc-controller: the operator's process. It runs the InferencePool controller (informers over
// pools, worker pods and nodes; the reconciler that keeps each pool's workers and routing state
// and publishes its status), the scrape loop (every replica scrapes every worker), leader election
// on a Lease, the pick endpoint that gateways call (every replica, leader or not), and /metrics,
// /healthz and /readyz; it stops cleanly on SIGTERM or SIGINT, answering waiting picks and
// handing the Lease back.
//
//   eoc-controller --kubeconfig ~/.kube/config --leader-elect --pick-bind-address :8090
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/kube_flags.h"
#include "common/descriptors.h"
#include "common/stop_signals.h"
#include "controller/access_reviews.h"
#include "controller/carbon/sdk_address.h"
#include "controller/demand.h"
#include "controller/kube_metrics.h"
#include "controller/pool_controller.h"
#include "controller/pool_metrics.h"
#include "controller/scale_client.h"
#include "controller/scaler_metrics.h"
#include "controller/scrape/apiserver_proxy_fetcher.h"
#include "controller/scrape/direct_fetcher.h"
#include "controller/scrape_loop.h"
#include "controller/scrape_metrics.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/leader_election.h"
#include "routing/pool_directory.h"
#include "server/access.h"
#include "server/access_gate.h"
#include "server/caller_caps.h"
#include "server/handlers.h"
#include "server/pick_endpoint.h"
#include "server/pick_metrics.h"
#include "server/pool_ticker.h"
#include "server/server.h"
#include "telemetry/logging.h"
#include "telemetry/metrics.h"

namespace {

using eoc::telemetry::Logger;
namespace kube = eoc::kube;

struct Flags {
  eoc::cli::KubeFlags kube;
  std::vector<std::string> namespaces;  // empty = all namespaces
  int reconcile_workers = 2;
  bool leader_elect = false;
  std::string leader_election_namespace;
  std::string leader_election_id = "eoc-operator";
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  int informer_stale_after_seconds = 60;
  bool readyz_requires_fresh_caches = false;
  double scrape_proxy_qps = 250;
  int scrape_proxy_burst = 250;
  int scrape_max_in_flight = 64;
  int carbon_poll_interval_seconds = 300;  // signals::kMinCarbonPollInterval
  int carbon_timeout_seconds = 10;         // carbon::kCarbonFetchTimeout
  int carbon_max_in_flight = 8;            // carbon::kCarbonMaxInFlight
  int max_carbon_sdk_urls_per_namespace = 4;
  int max_carbon_config_maps_per_namespace = 4;
  int max_exporter_selectors_per_namespace = 4;
  std::vector<std::string> exporter_namespaces;  // besides each pool's own
  std::string carbon_sdk_allowed_cidrs;          // carbon::ParseCidrList's form
  std::string metrics_tls_cert_file;
  std::string metrics_tls_key_file;
  std::string pick_bind_address = ":8090";
  std::string pick_tls_cert_file;
  std::string pick_tls_key_file;
  std::string pick_client_ca_file;
  std::string pick_client_certs;  // none, request, require; empty: require with a CA file
  int pick_threads = 2;
  int pick_max_connections = 4096;
  std::size_t pick_max_waiting = eoc::server::PickEndpoint::kDefaultMaxWaiting;
  std::size_t pick_max_waiting_per_caller =
      eoc::server::CallerCaps::Options{}.max_waiting_per_caller;
  std::size_t pick_max_waiting_per_user = eoc::server::CallerCaps::Options{}.max_waiting_per_user;
  double pick_max_reserved_share = eoc::server::CallerCaps::Options{}.max_reserved_share;
  double pick_max_reserved_share_per_user =
      eoc::server::CallerCaps::Options{}.max_reserved_share_per_user;
  std::size_t pick_max_header_bytes = std::size_t{16} * 1024;
  std::size_t pick_max_body_bytes = std::size_t{1024} * 1024;
  std::size_t pick_max_body_bytes_in_flight = std::size_t{256} * 1024 * 1024;
  int pick_idle_timeout_seconds = 60;
  std::size_t max_sessions_total = 4'000'000;
  std::size_t max_prefix_blocks_total = 4'000'000;
  int autoscaler_tick_ms = 1000;
  std::string pod_deletion_cost = "auto";
  int fd_reserve = 1024;
  std::string pick_auth = "none";
  std::string metrics_auth = "none";
  std::string client_cert_user_prefix = "eoc:";
  double access_review_qps = 20;
  int access_review_burst = 40;
};

// Whether a listener checks its callers (--pick-auth, --metrics-auth).
bool Checks(const std::string& mode) { return mode == "kubernetes"; }

// Connections each of the /metrics and probe listeners holds open at once: Prometheus and the
// kubelet need a few.
constexpr std::size_t kProbeListenerConnections = 64;

// Raises the soft open-files limit to the hard one, after checking that the connection caps and
// fetches in flight fit under it with --fd-reserve to spare; throws naming the flags when not.
void RaiseDescriptorLimit(const Flags& flags, const Logger& log) {
  const bool shared = flags.metrics_bind_address == flags.health_probe_bind_address;
  const std::vector<eoc::DescriptorUse> uses = {
      {"--pick-max-connections", static_cast<std::uint64_t>(flags.pick_max_connections)},
      {"--scrape-max-in-flight", static_cast<std::uint64_t>(flags.scrape_max_in_flight)},
      {"--carbon-max-in-flight", static_cast<std::uint64_t>(flags.carbon_max_in_flight)},
      {"the /metrics and probe listeners", (shared ? 1 : 2) * kProbeListenerConnections},
      {"--fd-reserve", static_cast<std::uint64_t>(flags.fd_reserve)}};
  std::string error;
  const auto limits = eoc::ReadDescriptorLimits(&error);
  const auto plan = limits ? eoc::PlanDescriptors(*limits, uses, &error) : std::nullopt;
  if (!plan || !eoc::SetSoftDescriptorLimit(plan->soft, &error)) throw std::runtime_error(error);
  log.Info("open-files limit", {{"soft", plan->soft},
                                {"was", limits->soft},
                                {"hard", limits->hard},
                                {"needed", plan->needed}});
}

// Checks that the picks waiting at once cannot hold every pick connection (at that cap a new
// client would take a waiting pick's place); throws naming both flags when they could.
void CheckWaitingCap(const Flags& flags) {
  if (flags.pick_max_waiting < static_cast<std::size_t>(flags.pick_max_connections)) return;
  throw std::runtime_error(
      "--pick-max-waiting " + std::to_string(flags.pick_max_waiting) +
      " must be below --pick-max-connections " + std::to_string(flags.pick_max_connections) +
      ": each waiting pick holds a connection, and some must stay for picks that find room");
}

// --carbon-sdk-allowed-cidrs, checked when the flags were parsed.
std::vector<eoc::controller::carbon::Cidr> SdkAllowedCidrs(const Flags& flags) {
  std::string error;
  auto cidrs = eoc::controller::carbon::ParseCidrList(flags.carbon_sdk_allowed_cidrs, &error);
  if (!cidrs) throw std::runtime_error("--carbon-sdk-allowed-cidrs: " + error);
  return *std::move(cidrs);
}

// A listener's TLS from its flags (`flag` names them: "--pick"): none without a certificate file.
// Throws naming the flags when they do not fit together.
std::optional<eoc::server::TlsFiles> ListenerTls(const std::string& flag,
                                                 const std::string& cert_file,
                                                 const std::string& key_file,
                                                 const std::string& client_ca_file = {},
                                                 const std::string& client_certs = {}) {
  using eoc::server::ClientCerts;
  if (cert_file.empty() != key_file.empty()) {
    throw std::runtime_error(flag + "-tls-cert-file and " + flag +
                             "-tls-key-file go together: give both or neither");
  }
  if (cert_file.empty()) {
    if (!client_ca_file.empty() || !client_certs.empty()) {
      throw std::runtime_error(flag + "-client-ca-file and " + flag +
                               "-client-certs need TLS: give " + flag + "-tls-cert-file and " +
                               flag + "-tls-key-file");
    }
    return std::nullopt;
  }
  ClientCerts mode = client_ca_file.empty() ? ClientCerts::kNone : ClientCerts::kRequire;
  if (client_certs == "none") mode = ClientCerts::kNone;
  if (client_certs == "request") mode = ClientCerts::kRequest;
  if (client_certs == "require") mode = ClientCerts::kRequire;
  if ((mode == ClientCerts::kNone) != client_ca_file.empty()) {
    throw std::runtime_error(flag + "-client-certs=" + client_certs + " and " + flag +
                             "-client-ca-file go together: request and require need the CA "
                             "file, none takes none");
  }
  return eoc::server::TlsFiles{.cert_file = cert_file,
                               .key_file = key_file,
                               .client_ca_file = client_ca_file,
                               .client_certs = mode};
}

// `access`: who may read /metrics (null: anyone).
std::unique_ptr<eoc::server::HttpServer> Serve(const std::string& address,
                                               const eoc::server::ReadinessChecks* readiness,
                                               const eoc::telemetry::Metrics* metrics,
                                               std::optional<eoc::server::TlsFiles> tls,
                                               eoc::server::AccessControl* access) {
  auto server = std::make_unique<eoc::server::HttpServer>(eoc::server::ServerOptions{
      .address = address, .max_connections = kProbeListenerConnections, .tls = std::move(tls)});
  if (readiness != nullptr) {
    server->Handle("GET", "/healthz", eoc::server::HealthzHandler());
    server->Handle("GET", "/readyz", eoc::server::ReadyzHandler(*readiness));
  }
  if (metrics != nullptr) {
    auto handler = eoc::server::MetricsHandler([metrics] { return metrics->Serialize(); });
    if (access != nullptr) {
      // As controller-runtime's metrics filter: get on the non-resource URL.
      handler = eoc::server::Guarded(*access, {.verb = "get", .path = "/metrics"}, handler);
    }
    server->Handle("GET", "/metrics", std::move(handler));
  }
  server->Start();
  return server;
}

int Run(const Flags& flags) {
  const Logger log("controller");
  CheckWaitingCap(flags);
  auto metrics_tls =
      ListenerTls("--metrics", flags.metrics_tls_cert_file, flags.metrics_tls_key_file);
  auto pick_tls = ListenerTls("--pick", flags.pick_tls_cert_file, flags.pick_tls_key_file,
                              flags.pick_client_ca_file, flags.pick_client_certs);
  // Bearer tokens over plain HTTP can be read by anyone on the path: allowed (a mesh may encrypt
  // the hop), but said.
  if (Checks(flags.pick_auth) && !pick_tls) {
    log.Warn("--pick-auth kubernetes without TLS: callers' tokens cross the network in the clear",
             {{"fix", "--pick-tls-cert-file and --pick-tls-key-file"}});
  }
  if (Checks(flags.metrics_auth) && !metrics_tls) {
    log.Warn(
        "--metrics-auth kubernetes without TLS: scrapers' tokens cross the network in the clear",
        {{"fix", "--metrics-tls-cert-file and --metrics-tls-key-file"}});
  }
  RaiseDescriptorLimit(flags, log);
  const eoc::cli::Connection api = eoc::cli::Connect(flags.kube);
  const kube::RestConfig& config = api.config;
  kube::Client& client = *api.client;
  log.Info("configured", {{"server", config.server}, {"source", config.source}});

  eoc::telemetry::Metrics metrics;
  eoc::controller::KubeMetrics kube_metrics(metrics.registry());
  eoc::controller::PoolMetrics pool_metrics(metrics.registry());
  eoc::server::ReadinessChecks readiness;

  // Each valid pool's routing state, for the pick path; written by the reconciler, loaded by the
  // scrape loop. Every replica scrapes every worker of every pool (each needs live load for its
  // own picks), through the fetcher its spec.metrics.access names.
  eoc::routing::SessionBudget session_budget(flags.max_sessions_total);
  eoc::routing::PrefixBudget prefix_budget(flags.max_prefix_blocks_total);
  eoc::routing::PoolDirectory directory(session_budget, prefix_budget);
  eoc::server::PickPools pick_pools;  // the pick endpoint's: each pool's state and HTTP settings
  eoc::controller::DirectFetcher direct_fetcher(
      {.max_in_flight = static_cast<std::size_t>(flags.scrape_max_in_flight)});
  const auto proxy_fetcher = eoc::controller::ApiServerProxyFetcher::Create(
      config, {.qps = flags.scrape_proxy_qps, .burst = flags.scrape_proxy_burst});
  eoc::controller::ScrapeMetrics scrape_metrics(metrics.registry());
  eoc::controller::ScrapeLoop scrape_loop({.direct = &direct_fetcher, .proxy = proxy_fetcher.get()},
                                          {.directory = &directory, .metrics = &scrape_metrics},
                                          eoc::RealClock());

  // Leader-only writers ask the elector, immediately before each write, whether the Lease is held
  // at that moment. `elector` is set below before any writer can write: events are recorded and
  // statuses written only once pools.Start() or the elector's own thread has begun.
  std::unique_ptr<kube::LeaderElector> elector;
  kube::WriteFence fence;
  if (flags.leader_elect) {
    fence = [&elector] { return elector != nullptr && elector->IsLeader(); };
  }
  kube::EventRecorder recorder(client, {.component = "eoc-controller"}, {.fence = fence});
  // This replica's name: its Lease identity, and its key in the pools' demand annotations.
  const std::string replica = kube::DefaultLeaderIdentity();
  // The autoscaler (leader only) reads and writes each pool's target through /scale.
  eoc::controller::KubeScaleClient scale_client(client);
  eoc::controller::ScalerMetrics scaler_metrics(metrics.registry());
  eoc::controller::PoolController pools(
      client, recorder,
      {.namespaces = flags.namespaces,
       .workers = flags.reconcile_workers,
       .reconcile =
           {.fence = fence, .directory = &directory, .picks = &pick_pools, .scrape = &scrape_loop},
       .stale_after = std::chrono::seconds(flags.informer_stale_after_seconds),
       .carbon = {.sdk_poll_interval = std::chrono::seconds(flags.carbon_poll_interval_seconds),
                  .sdk_timeout = std::chrono::seconds(flags.carbon_timeout_seconds),
                  .sdk_max_in_flight = static_cast<std::size_t>(flags.carbon_max_in_flight),
                  .max_sdk_urls_per_namespace =
                      static_cast<std::size_t>(flags.max_carbon_sdk_urls_per_namespace),
                  .max_config_maps_per_namespace =
                      static_cast<std::size_t>(flags.max_carbon_config_maps_per_namespace),
                  .sdk_allowed_cidrs = SdkAllowedCidrs(flags)},
       .max_exporter_selectors_per_namespace =
           static_cast<std::size_t>(flags.max_exporter_selectors_per_namespace),
       .exporter_namespaces = {flags.exporter_namespaces.begin(), flags.exporter_namespaces.end()},
       .scales = &scale_client,
       .scaler = {.tick = std::chrono::milliseconds(flags.autoscaler_tick_ms),
                  .replica = replica,
                  .deletion_cost = flags.pod_deletion_cost == "auto"
                                       ? std::nullopt
                                       : std::optional<bool>(flags.pod_deletion_cost == "always")},
       .scaler_metrics = &scaler_metrics},
      eoc::RealClock(), &kube_metrics, &pool_metrics);
  readiness.Add("inferencepools-synced", [&pools] { return pools.PoolsSynced(); });
  readiness.Add("pods-synced", [&pools] { return pools.PodsSynced(); });
  readiness.Add("nodes-synced", [&pools] { return pools.NodesSynced(); });
  // Stale caches show in /readyz?verbose without failing it by default: in an API-server outage
  // every replica goes stale at once, and picks are still best served from the caches.
  const auto fresh =
      flags.readyz_requires_fresh_caches ? eoc::server::kRequired : eoc::server::kInformational;
  readiness.Add(
      "inferencepools-fresh", [&pools] { return pools.PoolsFresh(); }, fresh);
  readiness.Add(
      "pods-fresh", [&pools] { return pools.PodsFresh(); }, fresh);
  readiness.Add(
      "nodes-fresh", [&pools] { return pools.NodesFresh(); }, fresh);

  // Who may pick and read /metrics: the API server's reviews, on a client of their own so that
  // a burst of new callers does not hold up the informers' calls.
  kube::ClientOptions review_options = flags.kube.client;
  review_options.qps = flags.access_review_qps;
  review_options.burst = flags.access_review_burst;
  const auto review_client = kube::Client::Create(config, review_options);
  eoc::controller::KubeReviewer reviewer(*review_client);
  eoc::server::AccessControl access(reviewer, eoc::RealClock(),
                                    {.cert_prefix = flags.client_cert_user_prefix});
  if (Checks(flags.pick_auth) || Checks(flags.metrics_auth)) access.Start();
  eoc::server::AccessControl* metrics_access = Checks(flags.metrics_auth) ? &access : nullptr;

  // Two listeners, as controller-runtime: metrics, and the kubelet's probes (which carry no
  // credentials: /healthz and /readyz stay open, and say nothing of tenants). The probes' is plain
  // HTTP, unless /metrics shares it: then both speak TLS when /metrics does.
  const bool shared = flags.metrics_bind_address == flags.health_probe_bind_address;
  auto health_server =
      Serve(flags.health_probe_bind_address, &readiness, shared ? &metrics : nullptr,
            shared ? metrics_tls : std::nullopt, metrics_access);
  std::unique_ptr<eoc::server::HttpServer> metrics_server;
  if (!shared) {
    metrics_server =
        Serve(flags.metrics_bind_address, nullptr, &metrics, metrics_tls, metrics_access);
  }

  // The pick endpoint, on its own address and threads, routing from this replica's directory.
  eoc::server::PickMetrics pick_metrics;
  metrics.AddCollector([&pick_metrics, &directory] { return pick_metrics.Collect(&directory); });
  eoc::server::CallerCaps caller_caps(
      {.max_waiting_per_caller = flags.pick_max_waiting_per_caller,
       .max_waiting_per_user = flags.pick_max_waiting_per_user,
       .max_reserved_share = flags.pick_max_reserved_share,
       .max_reserved_share_per_user = flags.pick_max_reserved_share_per_user});
  const eoc::server::PickEndpoint pick_endpoint(
      pick_pools, pick_metrics, eoc::RealClock(),
      {.pools_loaded = [&pools] { return pools.PoolsSynced(); },
       .max_waiting = flags.pick_max_waiting,
       .access = Checks(flags.pick_auth) ? &access : nullptr,
       .caps = &caller_caps});
  eoc::server::PoolTicker ticker(directory, eoc::RealClock());
  ticker.Start();
  // Every replica reports the picks waiting in its queues, for the leader's autoscaler.
  eoc::controller::DemandReporter demand(client, directory, replica, eoc::RealClock());
  const bool pick_server_tls = pick_tls.has_value();
  eoc::server::HttpServer pick_server(
      {.address = flags.pick_bind_address,
       .threads = flags.pick_threads,
       .max_header_bytes = flags.pick_max_header_bytes,
       .max_body_bytes = flags.pick_max_body_bytes,
       .max_body_bytes_in_flight = flags.pick_max_body_bytes_in_flight,
       .idle_timeout = std::chrono::seconds(flags.pick_idle_timeout_seconds),
       .max_connections = static_cast<std::size_t>(flags.pick_max_connections),
       .tls = std::move(pick_tls)});
  pick_endpoint.Register(pick_server);
  metrics.AddCollector([&pick_server] { return eoc::server::PickConnectionMetrics(pick_server); });
  pick_server.Start();
  log.Info("serving", {{"metrics", flags.metrics_bind_address},
                       {"health", flags.health_probe_bind_address},
                       {"picks", flags.pick_bind_address},
                       {"metrics_tls", metrics_tls.has_value()},
                       {"picks_tls", pick_server_tls}});

  std::unique_ptr<kube::Client> elector_client;
  if (flags.leader_elect) {
    kube::LeaderElectionConfig lc;
    lc.lease_namespace =
        flags.leader_election_namespace.empty() ? config.ns : flags.leader_election_namespace;
    lc.lease_name = flags.leader_election_id;
    lc.identity = replica;
    const kube::ObjectReference lease{.kind = "Lease",
                                      .ns = lc.lease_namespace,
                                      .name = lc.lease_name,
                                      .api_version = "coordination.k8s.io/v1"};
    kube::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [&log, &recorder, &pools, lease, identity = lc.identity] {
      log.Info("started leading", {{"lease", lease.ns + "/" + lease.name}});
      recorder.Record(lease, kube::EventType::kNormal, "LeaderElection",
                      identity + " became leader");
      pools.SetLeading(true);
    };
    callbacks.on_stopped_leading = [&log, &pools, lease] {
      log.Info("stopped leading", {{"lease", lease.ns + "/" + lease.name}});
      pools.SetLeading(false);
    };
    callbacks.on_new_leader = [&log](const std::string& who) {
      log.Info("leader observed", {{"identity", who}});
    };
    // The elector's own client: a call that hangs must end well within the renew deadline, so
    // that a leader cut off from the API server steps down in time.
    kube::ClientOptions elector_options = flags.kube.client;
    elector_options.transport.request_timeout = lc.renew_deadline / 2;
    elector_client = kube::Client::Create(config, elector_options);
    elector = std::make_unique<kube::LeaderElector>(
        *elector_client, lc, callbacks,
        kube::LeaderElectorDeps{.metrics = &kube_metrics.Leader(lc.lease_name)});
  }
  scrape_loop.Start();
  pools.Start();
  demand.Start();
  if (elector) {
    elector->Start();
  } else {
    pools.SetLeading(true);
  }

  const int signal = eoc::WaitForStopSignal();
  log.Info("stopping", {{"signal", signal}});
  if (elector) elector->Stop();  // hands the Lease back first, so a successor starts at once
  pick_server.Stop();            // waiting picks answer 503; answers being sent drain
  demand.Stop();                 // its reports go with it
  ticker.Stop();
  pools.Stop();
  scrape_loop.Stop();
  if (metrics_server) metrics_server->Stop();
  health_server->Stop();
  access.Stop();  // after every listener that asks it
  log.Info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"eoc-controller: runs fleets of LLM inference servers on Kubernetes"};
  Flags f;
  eoc::cli::AddKubeFlags(app, f.kube);
  eoc::cli::AddLogLevelFlag(app, f.kube);
  app.add_option("--namespace", f.namespaces,
                 "watch InferencePools and pods in this namespace only; repeat for more "
                 "(default: all)");
  app.add_flag("--leader-elect", f.leader_elect,
               "elect a leader on a Lease; only the leader writes status and scales");
  app.add_option("--leader-election-namespace", f.leader_election_namespace,
                 "namespace of the Lease (default: the kubeconfig's or service account's)");
  app.add_option("--leader-election-id", f.leader_election_id, "name of the Lease")
      ->capture_default_str();
  app.add_option("--metrics-bind-address", f.metrics_bind_address,
                 "host:port for /metrics (\":8080\": every interface)")
      ->capture_default_str();
  app.add_option("--health-probe-bind-address", f.health_probe_bind_address,
                 "host:port for /healthz and /readyz")
      ->capture_default_str();
  app.add_option("--metrics-tls-cert-file", f.metrics_tls_cert_file,
                 "PEM certificate (then intermediates) to serve /metrics over TLS with; read "
                 "again when it changes. When /metrics shares the probes' address, the probes "
                 "are served over TLS too (probe scheme HTTPS)");
  app.add_option("--metrics-tls-key-file", f.metrics_tls_key_file,
                 "PEM private key of --metrics-tls-cert-file");
  app.add_option("--reconcile-workers", f.reconcile_workers,
                 "pools reconciled at once (each pool by one worker at a time)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--informer-stale-after", f.informer_stale_after_seconds,
                 "seconds of failed lists and watches after which a cache counts as stale "
                 "(logged, eoc_informer_stale, /readyz?verbose)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_flag("--readyz-requires-fresh-caches", f.readyz_requires_fresh_caches,
               "make a stale cache fail /readyz (default: shown in /readyz?verbose only)");
  app.add_option("--scrape-max-in-flight", f.scrape_max_in_flight,
                 "workers' metrics pages fetched at once (spec.metrics.access Direct)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--scrape-proxy-qps", f.scrape_proxy_qps,
                 "requests per second to the API server's pods/proxy for scrapes "
                 "(spec.metrics.access APIServerProxy; apart from --kube-api-qps)")
      ->check(CLI::Range(1.0, 10000.0))
      ->capture_default_str();
  app.add_option("--scrape-proxy-burst", f.scrape_proxy_burst, "burst of those requests")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--carbon-poll-interval", f.carbon_poll_interval_seconds,
                 "seconds between two polls of one Carbon Aware SDK (spec.carbon.carbonAwareSdk) "
                 "for one set of zones, failed or not (its providers publish every 5 minutes)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--carbon-timeout", f.carbon_timeout_seconds,
                 "seconds one poll of a Carbon Aware SDK may take, from name lookup to answer")
      ->check(CLI::Range(1, 300))
      ->capture_default_str();
  app.add_option("--carbon-max-in-flight", f.carbon_max_in_flight,
                 "Carbon Aware SDK polls in flight at once; at most half of them for SDKs whose "
                 "last poll failed or that were never polled")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--max-carbon-sdk-urls-per-namespace", f.max_carbon_sdk_urls_per_namespace,
                 "distinct spec.carbon.carbonAwareSdk.url that one namespace's pools may use; a "
                 "pool past it is not polled (CarbonIntensityAvailable False, NamespaceLimit)")
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  app.add_option("--max-carbon-config-maps-per-namespace", f.max_carbon_config_maps_per_namespace,
                 "distinct spec.carbon.configMapRef that one namespace's pools may watch; a pool "
                 "past it is not watched (CarbonIntensityAvailable False, NamespaceLimit)")
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  app.add_option("--carbon-sdk-allowed-cidrs", f.carbon_sdk_allowed_cidrs,
                 "comma-separated CIDRs (or addresses) that spec.carbon.carbonAwareSdk.url may "
                 "reach although refused by default: loopback, link-local, unspecified and cloud "
                 "metadata addresses (e.g. 127.0.0.1/32 for an SDK in the pod); private ranges "
                 "are always allowed")
      ->check([](const std::string& value) {
        std::string error;
        return eoc::controller::carbon::ParseCidrList(value, &error) ? std::string() : error;
      });
  app.add_option("--exporter-namespaces", f.exporter_namespaces,
                 "comma-separated namespaces whose pods any pool's spec.energy.exporter may name, "
                 "besides the pool's own (default: none; the chart passes "
                 "rbac.exporterNamespaces); a pool naming another is not watched (said in its "
                 "Ready condition)")
      ->delimiter(',');
  app.add_option("--max-exporter-selectors-per-namespace", f.max_exporter_selectors_per_namespace,
                 "distinct spec.energy.exporter (namespace and selector) that one namespace's "
                 "pools may watch; a pool past it is not watched (said in its Ready condition)")
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  app.add_option("--pick-bind-address", f.pick_bind_address,
                 "host:port of the pick endpoint that gateways call")
      ->capture_default_str();
  app.add_option("--pick-tls-cert-file", f.pick_tls_cert_file,
                 "PEM certificate (then intermediates) to serve the pick endpoint over TLS with "
                 "(TLS 1.2 or later); read again when it changes, for new connections");
  app.add_option("--pick-tls-key-file", f.pick_tls_key_file,
                 "PEM private key of --pick-tls-cert-file");
  app.add_option("--pick-client-ca-file", f.pick_client_ca_file,
                 "PEM CA certificates that pick clients' certificates must chain to (mTLS)");
  app.add_option("--pick-client-certs", f.pick_client_certs,
                 "client certificates on the pick endpoint: none, request (verified when "
                 "sent) or require (default: require with --pick-client-ca-file, else none)")
      ->check(CLI::IsMember({"none", "request", "require"}));
  app.add_option("--pick-threads", f.pick_threads, "I/O threads of the pick endpoint")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--pick-max-connections", f.pick_max_connections,
                 "connections the pick endpoint holds open at once (at the cap, the one idle "
                 "or stalled longest gives way to a new one)")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--pick-max-waiting", f.pick_max_waiting,
                 "picks waiting at once in all pools together (past it a pick that finds no room "
                 "answers 429 at once); below --pick-max-connections")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}))
      ->capture_default_str();
  app.add_option("--pick-max-waiting-per-caller", f.pick_max_waiting_per_caller,
                 "picks one caller (one identity, with --pick-auth kubernetes) may have waiting "
                 "in one pool (past it a pick that finds no room answers 429 at once; 0: no cap)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))
      ->capture_default_str();
  app.add_option("--pick-max-waiting-per-user", f.pick_max_waiting_per_user,
                 "picks one end user a caller names (x-eoc-fairness-key, set by the gateway) may "
                 "have waiting in one pool, within the caller's (0: no cap)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))
      ->capture_default_str();
  app.add_option("--pick-max-reserved-share", f.pick_max_reserved_share,
                 "the share of a pool's KV cache one caller's picks may reserve per scrape "
                 "interval while other callers' picks wait in the pool (over it a pick answers "
                 "429 at once; 0: no cap)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--pick-max-reserved-share-per-user", f.pick_max_reserved_share_per_user,
                 "the same for one end user a caller names (x-eoc-fairness-key), while its "
                 "caller's other end users' picks wait (0: no cap)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--pick-max-header-bytes", f.pick_max_header_bytes,
                 "a pick request's start line and headers together, at most (more: 431)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--pick-max-body-bytes", f.pick_max_body_bytes,
                 "a pick request's body, at most (more: 413)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{64} << 20))
      ->capture_default_str();
  app.add_option("--pick-max-body-bytes-in-flight", f.pick_max_body_bytes_in_flight,
                 "the bodies of all pick requests together, taken as their bytes arrive (a "
                 "request past it: 503 with Retry-After; at least --pick-max-body-bytes)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40))
      ->capture_default_str();
  app.add_option("--pick-idle-timeout", f.pick_idle_timeout_seconds,
                 "seconds a kept-alive pick connection may idle between requests")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option("--max-sessions-total", f.max_sessions_total,
                 "session bindings of all pools together (each pool also has its maxSessions)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}))
      ->capture_default_str();
  app.add_option("--max-prefix-blocks-total", f.max_prefix_blocks_total,
                 "prompt-prefix blocks of all pools' prefix indexes together, about 56 bytes "
                 "each; each pool keeps min(its maxBlocks, this / pools) (PrefixIndexClamped)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}))
      ->capture_default_str();
  app.add_option("--autoscaler-tick-ms", f.autoscaler_tick_ms,
                 "milliseconds between two runs of each pool's autoscaling policy (Ray Serve's "
                 "control loop runs every 100)")
      ->check(CLI::Range(10, 60'000))
      ->capture_default_str();
  app.add_option(
         "--pod-deletion-cost", f.pod_deletion_cost,
         "whether a Deployment's scale-in pins the pods it drains with "
         "controller.kubernetes.io/pod-deletion-cost: auto (when the API server is 1.22 or "
         "later), always, or never (then it drains the pods the ReplicaSet controller's own "
         "ranking removes)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("--fd-reserve", f.fd_reserve,
                 "open files kept beside the connection caps and fetches in flight, for API "
                 "calls and watches, the Lease and files; at start the soft open-files limit is "
                 "raised to the hard one, which must hold them all")
      ->check(CLI::Range(64, 1'000'000))
      ->capture_default_str();
  app.add_option("--pick-auth", f.pick_auth,
                 "who may call the pick endpoint: none (anyone who reaches it: for local use), or "
                 "kubernetes (a bearer token checked with a TokenReview, or a client certificate, "
                 "and the verb on inferencepools/pick in the pool's namespace checked with a "
                 "SubjectAccessReview: create to pick, get and delete for sessions)")
      ->check(CLI::IsMember({"none", "kubernetes"}))
      ->capture_default_str();
  app.add_option("--metrics-auth", f.metrics_auth,
                 "who may read /metrics: none, or kubernetes (a bearer token checked with a "
                 "TokenReview, and get on the non-resource URL /metrics with a "
                 "SubjectAccessReview, as controller-runtime's metrics filter)")
      ->check(CLI::IsMember({"none", "kubernetes"}))
      ->capture_default_str();
  app.add_option("--client-cert-user-prefix", f.client_cert_user_prefix,
                 "put before a client certificate's CN (the user) and each O (its groups), so "
                 "that they cannot be taken for the cluster's own names; a certificate naming a "
                 "system: user or group is refused whatever the prefix")
      ->capture_default_str();
  app.add_option("--access-review-qps", f.access_review_qps,
                 "TokenReviews and SubjectAccessReviews per second at most, on a client of their "
                 "own (answers are cached: a known caller asks none)")
      ->check(CLI::Range(1.0, 10000.0))
      ->capture_default_str();
  app.add_option("--access-review-burst", f.access_review_burst, "burst of those reviews")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  return eoc::cli::Main(app, argc, argv, f.kube, "controller", [&f] { return Run(f); });
}
