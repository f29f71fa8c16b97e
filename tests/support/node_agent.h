// A node agent that plays the kubelet (and the scheduler) for the local control plane, which runs
// neither (DESIGN.md, "Testing against a real Kubernetes API server"): it registers Nodes, binds
// pending pods to them, starts a FakeWorker per pod on a loopback address of its own, reports the
// pods Running and Ready, and finishes their deletion.
//
//   eoc::testing::NodeAgent agent(*client, {
//       .nodes = {{.name = "gpu-a", .labels = {{"topology.kubernetes.io/region", "eu-north-1"}},
//                  .gpus = 8}},
//       .namespaces = {"my-test-ns"},
//       .address_base = "127.0.10.1"});
//   agent.Start();
//   agent.WaitForSync(std::chrono::seconds(30));
//   ... create a Deployment; its pods go Running and Ready, each with a worker ...
//   if (auto worker = agent.Worker("my-test-ns", "web-7d9c-abcde")) worker->SetLoad({...});
//   agent.SetReady("my-test-ns", "web-7d9c-abcde", false);   // Ready=False on the server
//   agent.Stop();   // stops the workers; deletes nothing
//
// What it does, all on one background thread fed by a work queue (failures are logged and
// retried with backoff; a malformed pod is skipped, never fatal):
// - Nodes: created (or their labels and status updated when present) with the given labels,
//   capacity and allocatable, a Ready condition, and no taints (the not-ready taint the API
//   server gives a new Node is lifted, as the node lifecycle controller would for a Ready node).
//   The heartbeat is not renewed: the node lifecycle controller does not run on the local plane, so
//   nothing marks the Node NotReady.
// - Scheduling: an unbound, pending, non-terminating pod goes to the first node (in the order
//   given) whose labels satisfy its spec.nodeSelector and its required node affinity (labels by
//   matchExpressions, the node's name by matchFields: how the DaemonSet controller pins its pods,
//   node_agent_affinity.h) and, if it requests nvidia.com/gpu, whose GPU count covers the
//   request, through the pods/binding subresource. A required affinity the agent cannot evaluate
//   leaves the pod unbound (logged). Not modelled: preferred affinity, pod (anti-)affinity, taints
//   (the agent's nodes have none, so tolerations do not matter) and resource accounting (any
//   number of pods fit a node).
// - Running: a pod bound to one of its nodes gets an address from the pool (its podIP;
//   the pod's existing podIP is kept when it has one) and, with `start_workers`, a FakeWorker on
//   the first container's first containerPort (8000 when none), configured by the pod's
//   annotations (ApplyAnnotations in fake_worker.h: fake.eoc.dev/engine, delay-ms, model, dcgm,
//   and the load: running, waiting, kv-cache-usage, watts). When a running pod's load annotations
//   change, its worker's load is set from them again (a removed one sets its figure to 0); a
//   test's SetLoad stands until they do. A pod annotated fake.eoc.dev/exporter: dcgm|kepler gets
//   an exporter instead (fake_worker.h): its page lists every other worker on its node, with the
//   watts of their load and the energy those add up to.
//   Then pods/status is patched: Running, podIP(s), hostIP, startTime, the four conditions
//   (PodScheduled, Initialized, ContainersReady, Ready) and containerStatuses.
// - Deletion: a terminating pod bound to its node has its worker stopped, its address released,
//   and is deleted with grace period 0 (UID precondition). A pod deleted outright has its worker
//   stopped. Addresses are handed out round-robin, so a released one is reused last.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fake_worker.h"
#include "kube/client.h"

namespace eoc::testing {

struct NodeSpec {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string cpu = "64";
  std::string memory = "512Gi";
  std::int64_t pods = 1000;  // capacity "pods": informative only
  std::int64_t gpus = 0;     // nvidia.com/gpu capacity; 0: the resource is not listed
};

struct NodeAgentOptions {
  std::vector<NodeSpec> nodes;
  // Namespaces whose pods it schedules and runs; empty: all. Tests that share a control plane
  // must name their own, or they would run other tests' pods.
  std::vector<std::string> namespaces;
  // The first pod address; later ones count up from it (127.0.10.1, 127.0.10.2, ...), skipping
  // x.y.z.0 and x.y.z.255. Linux routes all of 127/8 to the loopback interface. An address
  // outside 127/8 is taken when this host can bind it (a local interface's, or within a `local`
  // route): the pool is then the rest of its /24, every address of which must be bindable. The
  // API server proxies (pods/proxy) only to such addresses, never to loopback ones.
  std::string address_base = "127.0.10.1";
  std::string host_ip = "127.0.0.1";  // the nodes' InternalIP and the pods' hostIP
  // Start a FakeWorker per pod. Off: pods still get distinct addresses and go Ready (for
  // benchmarks with many pods and no servers).
  bool start_workers = true;
  int worker_threads = 4;
  std::string default_model = "fake-model";
};

// An address_base of this process's own (127.<20 + pid % 200>.0.1), so that test processes that
// share a control plane and run at once hand out different pod addresses.
std::string ProcessAddressBase();

class NodeAgent {
 public:
  // `client` must outlive the agent. Throws std::invalid_argument for options that cannot work
  // (no node, a node without a name, an address_base that is not IPv4, or outside 127.0.0.0/8
  // and not an address this host can bind).
  NodeAgent(kube::Client& client, NodeAgentOptions options);
  ~NodeAgent();  // Stop()s
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;
  NodeAgent(NodeAgent&&) = delete;
  NodeAgent& operator=(NodeAgent&&) = delete;

  // Starts the pod watch(es) and the work thread; registers the nodes in the background. Once:
  // a second call throws std::logic_error.
  void Start();
  // Stops the watches, the thread and every worker. Deletes nothing on the server. Idempotent.
  void Stop();

  // Waits until every node is registered and the pod caches are filled; false on timeout.
  bool WaitForSync(std::chrono::milliseconds timeout);

  // The worker of a pod this agent runs, or nullptr (unknown pod, or `start_workers` off).
  // The worker is stopped once its pod goes; holding the pointer keeps the object alive.
  std::shared_ptr<FakeWorker> Worker(const std::string& ns, const std::string& name) const;
  // The address (podIP) given to a pod this agent runs, or "".
  std::string PodIP(const std::string& ns, const std::string& name) const;
  // Sets whether the pod reports Ready (and ContainersReady, and its containers ready): the
  // status is patched soon after, in the background. False when the agent does not run the pod.
  bool SetReady(const std::string& ns, const std::string& name, bool ready);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eoc::testing
