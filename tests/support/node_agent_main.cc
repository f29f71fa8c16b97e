// eoc-node-agent: plays the kubelet (and the scheduler) for a control plane that runs neither, so
// that Deployments really produce fake inference workers on loopback addresses. See node_agent.h
// for what it does; it runs until SIGTERM or SIGINT, then stops its workers (deleting nothing).
//
//   eoc-node-agent --kubeconfig /tmp/cp/kubeconfig --namespace demo --address-base 127.0.10.1
//       --node gpu-a --node-labels gpu-a:topology.kubernetes.io/region=eu-north-1 --gpus gpu-a:8
//       --node cpu-b                                                   (one command line)
//
// Without --node, one node named eoc-node. Without --namespace, pods of every namespace.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli/kube_flags.h"
#include "common/stop_signals.h"
#include "node_agent.h"
#include "telemetry/logging.h"

namespace {

using eoc::telemetry::Logger;

struct Flags {
  eoc::cli::KubeFlags kube;
  std::vector<std::string> nodes;
  std::vector<std::string> node_labels;  // NAME:k=v,k=v
  std::vector<std::string> gpus;         // NAME:N
  std::vector<std::string> namespaces;
  std::string address_base = "127.0.10.1";
  bool no_workers = false;
  int worker_threads = 4;
};

// "NAME:rest" into NAME and rest; throws naming the flag when there is no colon or no name.
std::pair<std::string, std::string> SplitNodeValue(const std::string& flag,
                                                   const std::string& value) {
  const auto colon = value.find(':');
  if (colon == std::string::npos || colon == 0) {
    throw std::invalid_argument(flag + " \"" + value + "\": expected NODE:...");
  }
  return {value.substr(0, colon), value.substr(colon + 1)};
}

eoc::testing::NodeSpec& NodeNamed(std::vector<eoc::testing::NodeSpec>& nodes,
                                  const std::string& flag, const std::string& name) {
  for (auto& node : nodes) {
    if (node.name == name) return node;
  }
  throw std::invalid_argument(flag + ": no --node " + name);
}

std::vector<eoc::testing::NodeSpec> Nodes(const Flags& f) {
  std::vector<eoc::testing::NodeSpec> nodes;
  nodes.reserve(f.nodes.size());
  for (const auto& name : f.nodes) nodes.push_back({.name = name});
  if (nodes.empty()) nodes.push_back({.name = "eoc-node"});
  for (const auto& value : f.node_labels) {
    auto [name, list] = SplitNodeValue("--node-labels", value);
    auto& node = NodeNamed(nodes, "--node-labels", name);
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t end = std::min(list.find(',', start), list.size());
      const std::string pair = list.substr(start, end - start);
      const auto eq = pair.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw std::invalid_argument("--node-labels \"" + value + "\": expected k=v,k=v");
      }
      node.labels[pair.substr(0, eq)] = pair.substr(eq + 1);
      start = end + 1;
    }
  }
  for (const auto& value : f.gpus) {
    const auto [name, count] = SplitNodeValue("--gpus", value);
    auto& node = NodeNamed(nodes, "--gpus", name);
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), node.gpus);
    if (ec != std::errc() || end != count.data() + count.size() || node.gpus < 0) {
      throw std::invalid_argument("--gpus \"" + value + "\": expected NODE:N");
    }
  }
  return nodes;
}

int Run(const Flags& f) {
  const Logger log("node-agent");
  eoc::testing::NodeAgentOptions options{.nodes = Nodes(f),
                                         .namespaces = f.namespaces,
                                         .address_base = f.address_base,
                                         .start_workers = !f.no_workers,
                                         .worker_threads = f.worker_threads};
  const eoc::cli::Connection api = eoc::cli::Connect(f.kube);
  const eoc::kube::RestConfig& config = api.config;
  log.Info("configured", {{"server", config.server},
                          {"nodes", options.nodes.size()},
                          {"workers", options.start_workers}});
  eoc::testing::NodeAgent agent(*api.client, std::move(options));
  agent.Start();
  const int signal = eoc::WaitForStopSignal();
  log.Info("stopping", {{"signal", signal}});
  agent.Stop();
  log.Info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"eoc-node-agent: plays the kubelet for a local control plane, with fake workers"};
  Flags f;
  eoc::cli::AddKubeFlags(app, f.kube);
  eoc::cli::AddLogLevelFlag(app, f.kube);
  app.add_option("--node", f.nodes, "a Node to register and run pods on; repeat for more");
  app.add_option("--node-labels", f.node_labels, "NODE:k=v,k=v labels of a node; repeatable");
  app.add_option("--gpus", f.gpus, "NODE:N nvidia.com/gpu capacity of a node; repeatable");
  app.add_option("--namespace", f.namespaces, "run pods of this namespace only; repeatable");
  app.add_option("--address-base", f.address_base,
                 "the first pod address: loopback, or one this host can bind")
      ->capture_default_str();
  app.add_flag("--no-workers", f.no_workers,
               "start no fake workers: pods still get addresses and go Ready");
  app.add_option("--worker-threads", f.worker_threads, "I/O threads per fake worker")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  return eoc::cli::Main(app, argc, argv, f.kube, "node-agent", [&f] { return Run(f); });
}
