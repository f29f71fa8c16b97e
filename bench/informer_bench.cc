// bench_informer: what an informer over many pods costs, against a real API server.
//   EOC_KUBE_ENV=DIR/env bench_informer [--pods 2000] [--out FILE]
// Creates the pods (in a namespace of its own), then measures: heap bytes per cached pod, time
// from list start to synced, the rate at which watch events reach the handlers while the pods'
// status is patched, and the informer's own cost per event without the network.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "control_plane.h"
#include "kube/informer.h"
#include "kube/pod_view.h"

namespace {

using eoc::kube::Client;
using eoc::kube::Informer;
using eoc::kube::PodView;
using nlohmann::json;
namespace resources = eoc::kube::resources;
using Seconds = std::chrono::duration<double>;

// A pod shaped like a real inference worker's: labels, annotations, resources, conditions.
json WorkerPod(const std::string& name) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"labels", {{"app", "vllm"}, {"pool", "llama-3-8b"}, {"pod-template-hash", "6bf45d48d8"}}},
        {"annotations",
         {{"eoc.dev/models", "llama-3-8b,llama-3-8b-instruct"},
          {"prometheus.io/scrape", "true"},
          {"kubectl.kubernetes.io/last-applied-configuration", std::string(600, 'x')}}}}},
      {"spec",
       {{"automountServiceAccountToken", false},
        {"containers",
         json::array({{{"name", "vllm"},
                       {"image", "vllm/vllm-openai:v0.6.3"},
                       {"args", json::array({"--model", "meta-llama/Llama-3-8B", "--port", "8000",
                                             "--gpu-memory-utilization", "0.9"})},
                       {"ports", json::array({{{"containerPort", 8000}}})},
                       {"resources",
                        {{"requests", {{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "1"}}},
                         {"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
}

std::size_t HeapInUse() { return mallinfo2().uordblks; }

template <class F>
double Time(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return Seconds(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_informer: informer memory, sync time and event rate on a real API server"};
  int pods = 2000;
  std::string out_file;
  app.add_option("--pods", pods, "pods to create")->check(CLI::Range(1, 100000));
  app.add_option("--out", out_file, "append the figures (markdown) to this file");
  CLI11_PARSE(app, argc, argv);

  const auto* plane = eoc::testing::ControlPlane::Find();
  if (plane == nullptr) {
    std::cerr << "bench_informer: set EOC_KUBE_ENV to a control plane's env file\n";
    return 2;
  }
  eoc::kube::ClientOptions fast;
  fast.qps = 0;  // no client-side limit: the API server is what is measured
  auto client = Client::Create(plane->AdminConfig(), fast);
  const std::string ns = eoc::testing::UniqueName("bench");
  if (!client->Create(resources::kNamespaces, "", {{"metadata", {{"name", ns}}}})) return 1;

  std::cerr << "creating " << pods << " pods in " << ns << "\n";
  std::atomic<int> next{0};
  const double create_s = Time([&] {
    std::vector<std::thread> writers;
    writers.reserve(4);
    for (int w = 0; w < 4; ++w) {
      writers.emplace_back([&] {
        for (int i = next++; i < pods; i = next++) {
          auto r = client->Create(resources::kPods, ns, WorkerPod("worker-" + std::to_string(i)));
          if (!r) std::cerr << r.error().ToString() << "\n";
        }
      });
    }
    for (auto& t : writers) t.join();
  });

  // Memory: the heap an informer holds once its first watch runs (by then the listed documents are
  // freed and only the cache remains), over the pods and over an empty namespace; the difference
  // is what the pods cost.
  const std::string empty_ns = eoc::testing::UniqueName("bench-empty");
  if (!client->Create(resources::kNamespaces, "", {{"metadata", {{"name", empty_ns}}}})) return 1;
  struct WatchStarted final : eoc::kube::ReflectorMetrics {
    void OnWatchStart() override { ++watches; }
    std::atomic<int> watches{0};
  };
  const auto held_heap = [&](const std::string& namespace_name, auto&& keep) {
    WatchStarted started;
    const std::size_t before = HeapInUse();
    auto informer = std::make_unique<Informer<PodView>>(
        *client,
        eoc::kube::ReflectorOptions{
            .resource = resources::kPods, .ns = namespace_name, .metrics = &started},
        eoc::kube::ToPodView, eoc::RealClock());
    informer->Start();
    informer->WaitForSync(std::chrono::minutes(5));
    while (started.watches.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto held = static_cast<double>(HeapInUse()) - static_cast<double>(before);
    keep(*informer);
    informer->Stop();
    return held;
  };
  const double empty_heap = held_heap(empty_ns, [](auto&) {});
  std::size_t cached = 0;
  const double full_heap = held_heap(ns, [&](auto& i) { cached = i.Size(); });
  const double bytes_per_pod = (full_heap - empty_heap) / static_cast<double>(cached);
  (void)client->Delete(resources::kNamespaces, "", empty_ns);

  // Sync time, and watch events end to end.
  std::atomic<int> updates{0};
  Informer<PodView> informer(*client, {.resource = resources::kPods, .ns = ns},
                             eoc::kube::ToPodView, eoc::RealClock());
  informer.AddHandlers({.on_update = [&](const PodView&, const PodView&) { ++updates; }});
  double sync_s = 0;
  sync_s = Time([&] {
    informer.Start();
    informer.WaitForSync(std::chrono::minutes(5));
  });

  // Watch events end to end: patch every pod's status, count the updates the handlers see.
  next = 0;
  const double events_s = Time([&] {
    std::vector<std::thread> writers;
    writers.reserve(4);
    for (int w = 0; w < 4; ++w) {
      writers.emplace_back([&] {
        for (int i = next++; i < pods; i = next++) {
          (void)client->Patch(
              resources::kPods, ns, "worker-" + std::to_string(i), eoc::kube::PatchType::kMerge,
              {{"status", {{"podIP", "127.0.0." + std::to_string(i % 250 + 1)}}}}, "status");
        }
      });
    }
    for (auto& t : writers) t.join();
    while (updates.load() < pods) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  informer.Stop();

  // The informer's own cost per event, without the network: watch lines parsed and applied, as
  // the reflector does with what it reads.
  Informer<PodView> local(*client, {.resource = resources::kPods}, eoc::kube::ToPodView,
                          eoc::RealClock());
  constexpr int kLocalEvents = 100000;
  std::vector<std::string> lines;
  for (int i = 0; i < kLocalEvents; ++i) {
    json p = WorkerPod("w-" + std::to_string(i % 1000));
    p["metadata"]["namespace"] = ns;
    p["metadata"]["resourceVersion"] = std::to_string(i);
    lines.push_back(json{{"type", "MODIFIED"}, {"object", std::move(p)}}.dump());
  }
  const double local_s = Time([&] {
    for (const auto& line : lines) {
      eoc::kube::WatchEvent e = eoc::kube::ParseWatchEvent(line);
      local.Apply(e.type, std::move(e.object));
    }
  });

  (void)client->Delete(resources::kNamespaces, "", ns);

  std::ostringstream r;
  r << std::fixed << std::setprecision(1);
  r << "| pods | " << pods << " |\n"
    << "| creating them (4 writers) | " << create_s << " s (" << pods / create_s << " pods/s) |\n"
    << "| informer heap per cached pod (over an empty informer's " << empty_heap / 1024
    << " KiB) | " << bytes_per_pod << " bytes |\n"
    << "| list start to synced | " << sync_s * 1000 << " ms |\n"
    << "| watch events, status patch to handler (4 writers) | " << pods / events_s
    << " events/s |\n"
    << "| informer alone: watch line parsed, viewed, stored, handled (" << lines[0].size()
    << "-byte lines) | " << kLocalEvents / local_s << " events/s (" << local_s * 1e6 / kLocalEvents
    << " us each) |\n";
  std::cout << r.str();
  if (!out_file.empty()) std::ofstream(out_file, std::ios::app) << r.str();
  return 0;
}
