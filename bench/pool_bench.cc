// bench_pool: what the InferencePool controller costs for one pool of many workers, against a
// real API server, with the node agent playing the kubelet (pods get addresses and go Ready, no
// worker servers run).
//   EOC_KUBE_ENV=DIR/env bench_pool [--workers 1000] [--samples 20] [--out FILE]
// Measures: a reconcile that finds nothing changed (cache read, selection, status comparison);
// a reconcile that publishes the 1,000-worker table (one status write); and the time from a pod
// turning Ready (the node agent's status patch) to its appearing in the controller's membership
// and in the routing table on the API server.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "control_plane.h"
#include "controller/pool_controller.h"
#include "crds.h"
#include "eventually.h"
#include "manifests.h"
#include "node_agent.h"

namespace {

namespace controller = eoc::controller;
namespace resources = eoc::kube::resources;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Ms = std::chrono::duration<double, std::milli>;

struct Summary {
  double median = 0;
  double p90 = 0;
  double max = 0;
};

Summary Summarise(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) {
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
  };
  return {at(0.5), at(0.9), v.back()};
}

std::string Show(const Summary& s, const char* unit) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << "median " << s.median << " " << unit << ", p90 "
    << s.p90 << " " << unit << ", max " << s.max << " " << unit;
  return o.str();
}

bool Listed(eoc::kube::Client& client, const std::string& ns, const std::string& pool,
            const std::string& pod) {
  auto got = client.Get(controller::kInferencePools, ns, pool);
  if (!got || !got->contains("status")) return false;
  const auto status = eoc::api::ParseStatus((*got)["status"]);
  if (!status.routing) return false;
  const auto& ws = status.routing->workers;
  return std::any_of(ws.begin(), ws.end(), [&](const auto& w) { return w.pod == pod; });
}

bool HasWorker(const controller::PoolController& pools, const std::string& key,
               const std::string& pod) {
  const auto members = pools.Workers(key);
  if (members == nullptr) return false;
  const auto& ws = members->workers;
  return std::any_of(ws.begin(), ws.end(),
                     [&](const auto& w) { return controller::PodName(w) == pod; });
}

// Status writes the controller made so far (eoc_pool_status_writes_total{result="written"}).
double Writes(prometheus::Registry& registry) {
  for (const auto& family : registry.Collect()) {
    if (family.name != "eoc_pool_status_writes_total") continue;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.name == "result" && label.value == "written") return metric.counter.value;
      }
    }
  }
  return 0;
}

int Fail(const std::string& what) {
  std::cerr << "bench_pool: " << what << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_pool: the InferencePool controller's cost for one large pool"};
  int workers = 1000;
  int samples = 20;
  std::string out_file;
  app.add_option("--workers", workers, "pods in the pool")->check(CLI::Range(1, 5000));
  app.add_option("--samples", samples, "repeats of each measurement")->check(CLI::Range(3, 1000));
  app.add_option("--out", out_file, "append the figures (markdown) to this file");
  CLI11_PARSE(app, argc, argv);

  const auto* plane = eoc::testing::ControlPlane::Find();
  if (plane == nullptr) return Fail("set EOC_KUBE_ENV to a control plane's env file");
  if (auto error = eoc::testing::InstallCrds(*plane); !error.empty()) return Fail(error);
  eoc::kube::ClientOptions fast;
  fast.qps = 0;  // no client-side limit: the API server is what is measured
  auto client = eoc::kube::Client::Create(plane->AdminConfig(), fast);
  const std::string ns = eoc::testing::UniqueName("bench-pool");
  if (!client->Create(resources::kNamespaces, "", {{"metadata", {{"name", ns}}}})) {
    return Fail("cannot create namespace " + ns);
  }

  // The pods: a Deployment, bound and made Ready by the agent, without servers.
  eoc::testing::NodeAgent agent(*client, {.nodes = {{.name = ns + "-node", .pods = workers}},
                                          .namespaces = {ns},
                                          .address_base = "127.100.0.1",
                                          .start_workers = false});
  agent.Start();
  if (!agent.WaitForSync(std::chrono::seconds(60))) return Fail("node agent did not sync");
  const auto created_at = Clock::now();
  if (!client->Create(resources::kDeployments, ns,
                      eoc::testing::WorkerDeployment("fleet", workers))) {
    return Fail("cannot create the Deployment");
  }
  const bool all_ready = eoc::testing::Eventually(
      [&] {
        auto d = client->Get(resources::kDeployments, ns, "fleet");
        return d && (*d)["status"].value("readyReplicas", 0) == workers;
      },
      std::chrono::minutes(15));
  if (!all_ready) return Fail("the Deployment's pods did not all become ready");
  const double pods_ready_s = std::chrono::duration<double>(Clock::now() - created_at).count();

  // The controller, without background workers: this thread reconciles.
  auto controller_client = eoc::kube::Client::Create(plane->AdminConfig(), fast);
  eoc::kube::EventRecorder recorder(*controller_client, {.component = "bench"});
  prometheus::Registry registry;
  controller::PoolMetrics metrics(registry);
  controller::PoolController pools(
      *controller_client, recorder,
      {.namespaces = {ns},
       .workers = 0,
       .reconcile = {.min_publish_interval = std::chrono::milliseconds(0)}},
      eoc::RealClock(), nullptr, &metrics);
  pools.Start();
  pools.SetLeading(true);
  json pool = {
      {"apiVersion", "eoc.dev/v1alpha1"},
      {"kind", "InferencePool"},
      {"metadata", {{"name", "fleet"}}},
      {"spec", {{"selector", {{"matchLabels", {{"app", "fleet"}}}}}, {"targetPort", 8000}}}};
  if (!client->Create(controller::kInferencePools, ns, pool)) return Fail("cannot create pool");
  const std::string key = ns + "/fleet";
  const bool seen = eoc::testing::Eventually(
      [&] {
        if (!pools.HasSynced()) return false;
        (void)pools.Reconcile(key);
        const auto w = pools.Workers(key);
        return w != nullptr && static_cast<int>(w->workers.size()) == workers;
      },
      std::chrono::minutes(2));
  if (!seen) return Fail("the controller did not see every worker");

  // Steady state: the status matches, nothing is written.
  // The first reconciles publish the table and see their own write come back through the watch.
  (void)eoc::testing::Eventually(
      [&] {
        const double before = Writes(registry);
        (void)pools.Reconcile(key);
        return Writes(registry) == before;
      },
      std::chrono::seconds(30));
  std::vector<double> idle;
  const double writes_before_idle = Writes(registry);
  for (int i = 0; i < samples; ++i) {
    const auto t0 = Clock::now();
    (void)pools.Reconcile(key);
    idle.push_back(Ms(Clock::now() - t0).count());
  }
  const double idle_writes = Writes(registry) - writes_before_idle;

  // A membership change: one pod unready, then ready again; the reconcile that sees it writes the
  // whole table. Only reconciles that changed membership are timed.
  std::vector<double> publish;
  const auto pod_names = [&] {
    std::vector<std::string> names;
    for (const auto& w : pools.Workers(key)->workers) names.emplace_back(controller::PodName(w));
    return names;
  }();
  for (int i = 0; i < samples; ++i) {
    const std::string& pod = pod_names[static_cast<std::size_t>(i) % pod_names.size()];
    for (const bool ready : {false, true}) {
      agent.SetReady(ns, pod, ready);
      const bool changed = eoc::testing::Eventually(
          [&] {
            const auto before = pools.Workers(key);
            const auto t0 = Clock::now();
            (void)pools.Reconcile(key);
            const double took = Ms(Clock::now() - t0).count();
            if (pools.Workers(key) == before) return false;
            publish.push_back(took);
            return true;
          },
          std::chrono::seconds(60));
      if (!changed) return Fail("pod " + pod + " did not change membership");
    }
  }
  pools.Stop();

  // Ready to listed, with the controller as it runs in production: two background workers and
  // at most one status write a second per pool.
  controller::PoolController live(*controller_client, recorder, {.namespaces = {ns}},
                                  eoc::RealClock(), nullptr, nullptr);
  live.Start();
  live.SetLeading(true);
  if (!eoc::testing::Eventually([&] { return HasWorker(live, key, pod_names.front()); },
                                std::chrono::seconds(60))) {
    return Fail("the live controller did not sync");
  }
  std::vector<double> to_member;
  std::vector<double> to_table;
  for (int i = 0; i < samples; ++i) {
    const std::string& pod = pod_names[static_cast<std::size_t>(i * 7) % pod_names.size()];
    agent.SetReady(ns, pod, false);
    if (!eoc::testing::Eventually([&] { return !Listed(*client, ns, "fleet", pod); },
                                  std::chrono::seconds(60))) {
      return Fail("pod " + pod + " was not dropped");
    }
    // An isolated change: past the one-write-a-second limit of the drop's publish.
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    const auto t0 = Clock::now();
    agent.SetReady(ns, pod, true);
    bool member = false;
    const bool listed = eoc::testing::Eventually(
        [&] {
          if (!member && HasWorker(live, key, pod)) {
            member = true;
            to_member.push_back(Ms(Clock::now() - t0).count());
          }
          return Listed(*client, ns, "fleet", pod);
        },
        std::chrono::seconds(60));
    if (!listed) return Fail("pod " + pod + " did not reappear");
    if (!member) to_member.push_back(Ms(Clock::now() - t0).count());
    to_table.push_back(Ms(Clock::now() - t0).count());
  }
  live.Stop();
  agent.Stop();
  (void)client->Delete(resources::kNamespaces, "", ns);

  std::ostringstream r;
  r << std::fixed << std::setprecision(1);
  r << "| workers in the pool | " << workers << " |\n"
    << "| Deployment created to every pod Ready (node agent, no servers) | " << pods_ready_s
    << " s |\n"
    << "| reconcile, nothing changed (" << samples
    << " runs; status writes among them: " << idle_writes << ") | " << Show(Summarise(idle), "ms")
    << " |\n"
    << "| reconcile that publishes the table (one status write, " << publish.size() << " runs) | "
    << Show(Summarise(publish), "ms") << " |\n"
    << "| pod turned Ready to in the controller's membership (" << samples << " runs) | "
    << Show(Summarise(to_member), "ms") << " |\n"
    << "| pod turned Ready to listed in status.routing on the API server (an isolated change) | "
    << Show(Summarise(to_table), "ms") << " |\n";
  std::cout << r.str();
  if (!out_file.empty()) std::ofstream(out_file, std::ios::app) << r.str();
  return 0;
}
