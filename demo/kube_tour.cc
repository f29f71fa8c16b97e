// eoc-kube-tour: the REST client at work against whatever cluster the kubeconfig names. It reads
// the config, asks discovery which resource serves Deployments and whether it scales, creates a
// Deployment, watches its pods appear and go as it scales it through /scale, and cleans up.
//
//   eoc-kube-tour --kubeconfig /tmp/eoc-demo/kubeconfig --replicas 3
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/kube_flags.h"
#include "kube/client.h"
#include "kube/discovery.h"
#include "manifests.h"

namespace {

using eoc::kube::Client;
using eoc::kube::Result;
using eoc::kube::WatchEventType;
using nlohmann::json;
namespace resources = eoc::kube::resources;

std::mutex out_mu;

template <class... Args>
void Say(Args&&... args) {
  const std::lock_guard lock(out_mu);
  ((std::cout << std::forward<Args>(args)), ...) << std::endl;
}

template <class T>
T Must(Result<T> r, const std::string& what) {
  if (!r) {
    Say("  FAILED ", what, ": ", r.error().ToString());
    std::exit(1);  // NOLINT(concurrency-mt-unsafe): a demo's fatal error
  }
  return std::move(r).value();
}

std::size_t CountPods(Client& client, const std::string& ns, const std::string& selector) {
  return Must(client.List(resources::kPods, ns, {.label_selector = selector}), "list pods")
      .items.size();
}

bool WaitForPods(Client& client, const std::string& ns, const std::string& selector,
                 std::size_t want) {
  for (int i = 0; i < 120; ++i) {
    if (CountPods(client, ns, selector) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"eoc-kube-tour: the eoc-operator Kubernetes client against a live API server"};
  eoc::cli::KubeFlags kube;
  std::string ns = "eoc-demo";
  int replicas = 3;
  bool keep = false;
  eoc::cli::AddKubeFlags(app, kube);
  app.add_option("--namespace", ns, "namespace to create the demo Deployment in")
      ->capture_default_str();
  app.add_option("--replicas", replicas, "replicas to scale to")
      ->check(CLI::Range(1, 50))
      ->capture_default_str();
  app.add_flag("--keep", keep, "leave the namespace and Deployment in place");
  CLI11_PARSE(app, argc, argv);

  eoc::cli::Connection api;
  try {
    api = eoc::cli::Connect(kube);
  } catch (const eoc::kube::ConfigError& e) {
    std::cerr << "eoc-kube-tour: " << e.what() << "\n";
    return 2;
  }
  const eoc::kube::RestConfig& config = api.config;
  const char* auth = config.exec                       ? "exec plugin"
                     : !config.token_file.empty()      ? "token file"
                     : !config.token.empty()           ? "bearer token"
                     : !config.client_cert_pem.empty() ? "client certificate"
                                                       : "none";
  Say("1. config: server ", config.server, " (from ", config.source, "), auth: ", auth,
      ", CA: ", config.ca_pem.empty() ? "system roots" : "cluster CA");
  const std::unique_ptr<Client>& client = api.client;

  const json version = Must(client->GetPath("/version"), "GET /version");
  Say("2. API server ", version.value("gitVersion", "?"), " (", version.value("platform", "?"),
      ")");

  const auto namespaces = Must(client->List(resources::kNamespaces, "", {}), "list namespaces");
  std::string names;
  for (const auto& n : namespaces.items) names += " " + n["metadata"]["name"].get<std::string>();
  Say("3. namespaces:", names);

  eoc::kube::Discovery discovery(*client);
  const auto deployments = Must(discovery.ResourceFor("apps/v1", "Deployment"), "discovery");
  Say("4. discovery: apps/v1 Deployment is served as '", deployments.name,
      "', namespaced: ", deployments.namespaced ? "yes" : "no",
      ", /scale subresource: ", deployments.has_scale ? "yes" : "no");

  auto created_ns = client->Create(resources::kNamespaces, "", {{"metadata", {{"name", ns}}}});
  if (!created_ns && !created_ns.error().IsAlreadyExists()) {
    Must(std::move(created_ns), "create namespace " + ns);
  }
  const std::string name = "demo-worker";
  const std::string selector = "app=" + name;
  auto created = client->Create(deployments.Ref(), ns, eoc::testing::WorkerDeployment(name, 1));
  if (!created && !created.error().IsAlreadyExists()) Must(std::move(created), "create deployment");
  Say("5. Deployment ", ns, "/", name, " with 1 replica");

  // Watch the pods from now on; events print as they arrive.
  const auto start = Must(client->List(resources::kPods, ns, {.label_selector = selector}), "list");
  auto watch = Must(client->StartWatch(resources::kPods, ns,
                                       {.label_selector = selector,
                                        .resource_version = start.resource_version,
                                        .timeout_seconds = 300}),
                    "watch pods");
  std::thread watcher([&watch] {
    for (;;) {
      auto e = watch->Next();
      if (!e || !e->has_value()) return;
      const auto& ev = **e;
      if (ev.type == WatchEventType::kBookmark) continue;
      Say("   watch: ", eoc::kube::ToString(ev.type), " pod ",
          ev.object["metadata"].value("name", "?"), " (",
          ev.object.contains("status") ? ev.object["status"].value("phase", "?") : "?", ")");
    }
  });

  WaitForPods(*client, ns, selector, 1);
  const auto scaled = Must(client->SetReplicas(deployments.Ref(), ns, name, replicas), "scale");
  Say("6. PATCH ", deployments.Ref().ObjectPath(ns, name, "scale"),
      " -> spec.replicas=", scaled.spec_replicas);
  const bool up = WaitForPods(*client, ns, selector, static_cast<std::size_t>(replicas));
  Say("   the controller manager created the pods: ", CountPods(*client, ns, selector), " of ",
      replicas, up ? "" : " (timed out)");

  Must(client->SetReplicas(deployments.Ref(), ns, name, 1), "scale down");
  const bool down = WaitForPods(*client, ns, selector, 1);
  Say("7. scaled back to 1: ", CountPods(*client, ns, selector), " pod left",
      down ? "" : " (timed out)");

  watch->Stop();
  watcher.join();
  if (!keep) {
    Must(client->Delete(resources::kNamespaces, "", ns), "delete namespace");
    Say("8. deleted namespace ", ns);
  }
  return up && down ? 0 : 1;
}
