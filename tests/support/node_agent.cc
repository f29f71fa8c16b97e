#include "node_agent.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

#include "common/rfc3339.h"
#include "kube/informer.h"
#include "kube/work_queue.h"
#include "node_agent_pods.h"
#include "telemetry/logging.h"

namespace eoc::testing {
namespace {

using internal::AddressPool;
using internal::AgentPod;
using internal::kGpuResource;
using internal::ParseAddressBase;
using internal::ToAgentPod;
using nlohmann::json;
using WallClock = std::chrono::system_clock;

constexpr int kBindAttempts = 16;  // addresses tried for one worker before giving up for now

// What the agent keeps for a pod it runs.
struct PodState {
  std::string uid;
  std::string ip;
  std::shared_ptr<FakeWorker> worker;
  std::map<std::string, std::string> load_annotations;  // the worker's load was last set from
  bool want_ready = true;
  WallClock::time_point start_time;
  WallClock::time_point ready_since;  // the Ready condition's lastTransitionTime
};

// The load annotations (kLoadAnnotations) among `annotations`.
std::map<std::string, std::string> LoadAnnotationsOf(
    const std::map<std::string, std::string>& annotations) {
  std::map<std::string, std::string> load;
  for (const char* key : kLoadAnnotations) {
    if (const auto it = annotations.find(key); it != annotations.end()) load.insert(*it);
  }
  return load;
}

// The workers on each node, for the node's exporters (fake.eoc.dev/exporter) to report. Shared
// with the exporters' page callbacks, which run on their servers' threads, so never under the
// agent's mu_ (held while an exporter is stopped, which waits for those threads).
class NodeWorkers {
 public:
  struct Entry {
    std::string node;
    std::string ns;
    std::string name;
    std::string container;
    std::int64_t gpus = 0;
    std::shared_ptr<FakeWorker> worker;
  };

  void Add(const std::string& key, Entry entry) {
    const std::lock_guard lock(mu_);
    entries_.insert_or_assign(key, std::move(entry));
  }
  void Remove(const std::string& key) {
    const std::lock_guard lock(mu_);
    entries_.erase(key);
  }
  // The workers on `node`, by namespace and name, with their watts and energy now.
  std::vector<sim::ExporterPod> On(const std::string& node) const {
    std::vector<Entry> on;
    {
      const std::lock_guard lock(mu_);
      for (const auto& [key, entry] : entries_) {
        if (entry.node == node) on.push_back(entry);
      }
    }
    std::vector<sim::ExporterPod> pods;
    pods.reserve(on.size());
    for (const Entry& e : on) {
      pods.push_back({.pod_namespace = e.ns,
                      .pod_name = e.name,
                      .container = e.container,
                      .watts = e.worker->reported_load().watts,
                      .joules_total = e.worker->energy_joules(),
                      .gpus = static_cast<int>(std::max<std::int64_t>(1, e.gpus))});
    }
    return pods;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;  // by pod key
};

json Condition(const char* type, bool status, WallClock::time_point since) {
  json c = {{"type", type},
            {"status", status ? "True" : "False"},
            {"lastProbeTime", nullptr},
            {"lastTransitionTime", FormatRfc3339(since)}};
  if (!status) {
    c["reason"] = "ContainersNotReady";
    c["message"] = "made unready by the node agent";
  }
  return c;
}

}  // namespace

class NodeAgent::Impl {
 public:
  Impl(kube::Client& client, NodeAgentOptions options)
      : client_(client),
        options_(std::move(options)),
        pool_(ParseAddressBase(options_.address_base)),
        queue_("node-agent", RealClock(),
               std::make_unique<kube::ItemExponentialFailureRateLimiter>(
                   std::chrono::milliseconds(20), std::chrono::seconds(10))) {
    if (options_.nodes.empty()) throw std::invalid_argument("NodeAgent: no node given");
    for (auto& node : options_.nodes) {
      if (node.name.empty()) throw std::invalid_argument("NodeAgent: a node has no name");
      node.labels.emplace("kubernetes.io/hostname", node.name);
      node.labels.emplace("kubernetes.io/os", "linux");
      node.labels.emplace("kubernetes.io/arch", "amd64");
    }
    std::vector<std::string> namespaces = options_.namespaces;
    if (namespaces.empty()) namespaces.emplace_back();  // one informer over all namespaces
    for (const auto& ns : namespaces) {
      auto informer = std::make_unique<kube::Informer<AgentPod>>(
          client_, kube::ReflectorOptions{.resource = kube::resources::kPods, .ns = ns}, ToAgentPod,
          RealClock());
      const auto add = [this](const AgentPod& p) { queue_.Add(p.key()); };
      informer->AddHandlers({.on_add = add,
                             .on_update = [add](const AgentPod&, const AgentPod& p) { add(p); },
                             .on_delete = add});
      informers_.push_back(std::move(informer));
    }
  }

  void Start() {
    if (thread_.joinable()) throw std::logic_error("NodeAgent: started twice");
    for (const auto& node : options_.nodes) queue_.Add("node:" + node.name);
    for (auto& informer : informers_) informer->Start();
    thread_ = std::thread([this] { Run(); });
  }

  void Stop() {
    for (auto& informer : informers_) informer->Stop();
    queue_.ShutDown();
    if (thread_.joinable()) thread_.join();
    std::vector<std::shared_ptr<FakeWorker>> workers;
    {
      const std::lock_guard lock(mu_);
      for (auto& [key, state] : pods_) {
        if (state.worker) workers.push_back(std::move(state.worker));
      }
    }
    for (auto& worker : workers) worker->Stop();
  }

  bool WaitForSync(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (auto& informer : informers_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (!informer->WaitForSync(std::max(left, std::chrono::milliseconds(0)))) return false;
    }
    while (registered_nodes_.load() < options_.nodes.size()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  std::shared_ptr<FakeWorker> Worker(const std::string& key) const {
    const std::lock_guard lock(mu_);
    const auto it = pods_.find(key);
    return it == pods_.end() ? nullptr : it->second.worker;
  }
  std::string PodIP(const std::string& key) const {
    const std::lock_guard lock(mu_);
    const auto it = pods_.find(key);
    return it == pods_.end() ? "" : it->second.ip;
  }
  bool SetReady(const std::string& key, bool ready) {
    {
      const std::lock_guard lock(mu_);
      const auto it = pods_.find(key);
      if (it == pods_.end()) return false;
      if (it->second.want_ready != ready) it->second.ready_since = WallClock::now();
      it->second.want_ready = ready;
    }
    queue_.Add(key);
    return true;
  }

 private:
  void Run() {
    while (auto key = queue_.Get()) {
      bool ok = false;
      try {
        ok = key->starts_with("node:") ? RegisterNode(key->substr(5)) : ReconcilePod(*key);
      } catch (const std::exception& e) {
        log_.Error("reconcile failed", {{"key", *key}, {"error", e.what()}});
      }
      if (ok) {
        queue_.Forget(*key);
      } else {
        queue_.AddRateLimited(*key);
      }
      queue_.Done(*key);
    }
  }

  const NodeSpec* FindNode(const std::string& name) const {
    const auto it = std::find_if(options_.nodes.begin(), options_.nodes.end(),
                                 [&](const NodeSpec& n) { return n.name == name; });
    return it == options_.nodes.end() ? nullptr : &*it;
  }

  std::shared_ptr<const AgentPod> FindPod(const std::string& key) const {
    if (options_.namespaces.empty()) return informers_.front()->Get(key);
    const std::string ns = key.substr(0, key.find('/'));
    for (std::size_t i = 0; i < options_.namespaces.size(); ++i) {
      if (options_.namespaces[i] == ns) return informers_[i]->Get(key);
    }
    return nullptr;
  }

  bool RegisterNode(const std::string& name) {
    const NodeSpec& node = *FindNode(name);
    json resources = {
        {"cpu", node.cpu}, {"memory", node.memory}, {"pods", std::to_string(node.pods)}};
    if (node.gpus > 0) resources[kGpuResource] = std::to_string(node.gpus);
    const std::string now = FormatRfc3339(WallClock::now());
    const json status = {
        {"capacity", resources},
        {"allocatable", resources},
        {"conditions", json::array({{{"type", "Ready"},
                                     {"status", "True"},
                                     {"reason", "KubeletReady"},
                                     {"message", "the eoc node agent is posting ready status"},
                                     {"lastHeartbeatTime", now},
                                     {"lastTransitionTime", now}}})},
        {"addresses", json::array({{{"type", "InternalIP"}, {"address", options_.host_ip}},
                                   {{"type", "Hostname"}, {"address", node.name}}})},
        {"nodeInfo",
         {{"osImage", "eoc node agent"},
          {"containerRuntimeVersion", "fake://1"},
          {"kubeletVersion", "v1.20.2"},
          {"kubeProxyVersion", "v1.20.2"},
          {"operatingSystem", "linux"},
          {"architecture", "amd64"}}}};
    const json labels(node.labels);
    auto created = client_.Create(kube::resources::kNodes, "",
                                  {{"apiVersion", "v1"},
                                   {"kind", "Node"},
                                   {"metadata", {{"name", name}, {"labels", labels}}},
                                   {"status", status}});
    if (!created && !created.error().IsAlreadyExists()) return Failed("create node", name, created);
    // The API server's admission (TaintNodesByCondition) taints a new Node
    // node.kubernetes.io/not-ready:NoSchedule; the node lifecycle controller, which the local
    // plane does not run, lifts it once the node is Ready. The DaemonSet controller places no pod
    // on a node with a taint its pods do not tolerate, and they tolerate not-ready only as
    // NoExecute: so the agent lifts it (its nodes carry no taints).
    auto patched =
        client_.Patch(kube::resources::kNodes, "", name, kube::PatchType::kMerge,
                      {{"metadata", {{"labels", labels}}}, {"spec", {{"taints", nullptr}}}});
    if (!patched) return Failed("label and untaint node", name, patched);
    // Status is a subresource: a create may keep it, an update of the node never does.
    patched = client_.Patch(kube::resources::kNodes, "", name, kube::PatchType::kMerge,
                            {{"status", status}}, "status");
    if (!patched) return Failed("set node status", name, patched);
    log_.Info("node registered", {{"node", name}, {"gpus", node.gpus}});
    ++registered_nodes_;
    return true;
  }

  template <class T>
  bool Failed(const char* what, const std::string& key, const kube::Result<T>& result) {
    log_.Warn("api call failed",
              {{"op", what}, {"key", key}, {"error", result.error().ToString()}});
    return false;
  }

  bool ReconcilePod(const std::string& key) {
    const auto pod = FindPod(key);
    {
      const std::lock_guard lock(mu_);
      const auto it = pods_.find(key);
      if (it != pods_.end() && (pod == nullptr || pod->uid != it->second.uid)) Release(key);
    }
    if (pod == nullptr) return true;
    const bool ours = FindNode(pod->node_name) != nullptr;
    if (pod->terminating) {
      if (!ours) return true;
      {
        const std::lock_guard lock(mu_);
        Release(key);
      }
      auto deleted = client_.Delete(kube::resources::kPods, pod->ns, pod->name,
                                    {.grace_period_seconds = 0, .precondition_uid = pod->uid});
      if (!deleted && !deleted.error().IsNotFound() && !deleted.error().IsConflict()) {
        return Failed("delete pod", key, deleted);
      }
      log_.Info("pod deletion finished", {{"pod", key}});
      return true;
    }
    if (pod->phase == "Succeeded" || pod->phase == "Failed") return true;
    if (pod->node_name.empty()) return Bind(*pod);
    if (!ours) return true;
    if (!StartPod(*pod)) return false;
    UpdateLoad(*pod);
    return Report(*pod);
  }

  // Sets the load of the pod's running worker when its load annotations changed since they were
  // last applied (so a test's SetLoad stands until they change): the ones present as
  // ApplyLoadAnnotations reads them, a removed one back to 0.
  void UpdateLoad(const AgentPod& pod) {
    std::map<std::string, std::string> now = LoadAnnotationsOf(pod.annotations);
    std::vector<std::string> problems;
    sim::PageFigures load;
    {
      const std::lock_guard lock(mu_);
      const auto it = pods_.find(pod.key());
      if (it == pods_.end() || !it->second.worker || it->second.load_annotations == now) return;
      std::map<std::string, std::string> changed = now;
      for (const auto& [key, value] : it->second.load_annotations) changed.emplace(key, "0");
      load = ApplyLoadAnnotations(it->second.worker->load(), changed, &problems);
      it->second.worker->SetLoad(load);
      it->second.load_annotations = std::move(now);
    }
    for (const auto& problem : problems) {
      log_.Warn("annotation ignored", {{"pod", pod.key()}, {"problem", problem}});
    }
    log_.Info("worker load set", {{"pod", pod.key()},
                                  {"running", load.running},
                                  {"waiting", load.waiting},
                                  {"kv_cache_usage", load.kv_cache_usage},
                                  {"watts", load.watts}});
  }

  // Stops the pod's worker and frees its address. mu_ held.
  void Release(const std::string& key) {
    const auto it = pods_.find(key);
    if (it == pods_.end()) return;
    node_workers_->Remove(key);
    if (it->second.worker) it->second.worker->Stop();
    pool_.Release(it->second.ip);
    log_.Info("pod stopped", {{"pod", key}, {"ip", it->second.ip}});
    pods_.erase(it);
  }

  bool Bind(const AgentPod& pod) {
    if (!pod.affinity.problem.empty()) {
      log_.Warn("node affinity cannot be evaluated: the pod is not bound",
                {{"pod", pod.key()}, {"problem", pod.affinity.problem}});
      return true;  // looked at again when the pod changes
    }
    const auto fits = [&](const NodeSpec& node) {
      if (pod.gpus > node.gpus || !pod.affinity.Matches(node.name, node.labels)) return false;
      return std::all_of(pod.node_selector.begin(), pod.node_selector.end(), [&](const auto& kv) {
        const auto it = node.labels.find(kv.first);
        return it != node.labels.end() && it->second == kv.second;
      });
    };
    const auto node = std::find_if(options_.nodes.begin(), options_.nodes.end(), fits);
    if (node == options_.nodes.end()) {
      log_.Info("no node fits the pod",
                {{"pod", pod.key()}, {"gpus", pod.gpus}, {"node_affinity", pod.affinity.present}});
      return true;  // looked at again when the pod changes
    }
    auto bound =
        client_.Create(kube::resources::kPods, pod.ns,
                       {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", {{"name", pod.name}, {"namespace", pod.ns}, {"uid", pod.uid}}},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node->name}}}},
                       "binding");
    // 409: bound meanwhile (by us, or another agent); 404: gone. Either way the next event says.
    if (!bound && !bound.error().IsConflict() && !bound.error().IsNotFound()) {
      return Failed("bind pod", pod.key(), bound);
    }
    if (bound) log_.Info("pod bound", {{"pod", pod.key()}, {"node", node->name}});
    return true;
  }

  FakeWorkerOptions WorkerOptions(const AgentPod& pod) const {
    std::vector<std::string> problems;
    FakeWorkerOptions o = ApplyAnnotations({.model = options_.default_model,
                                            .pod_name = pod.name,
                                            .pod_namespace = pod.ns,
                                            .threads = options_.worker_threads},
                                           pod.annotations, &problems);
    for (const auto& problem : problems) {
      log_.Warn("annotation ignored", {{"pod", pod.key()}, {"problem", problem}});
    }
    if (o.exporter) {
      o.node_name = pod.node_name;
      o.exporter_pods = [workers = node_workers_, node = pod.node_name] {
        return workers->On(node);
      };
    }
    return o;
  }

  // Gives the pod an address and, with workers on, a worker listening there.
  bool StartPod(const AgentPod& pod) {
    {
      const std::lock_guard lock(mu_);
      if (pods_.contains(pod.key())) return true;
    }
    PodState state{.uid = pod.uid,
                   .load_annotations = LoadAnnotationsOf(pod.annotations),
                   .start_time = WallClock::now(),
                   .ready_since = WallClock::now()};
    const bool reuse = !pod.pod_ip.empty() && pool_.Claim(pod.pod_ip);
    for (int attempt = 0; attempt < kBindAttempts && state.ip.empty(); ++attempt) {
      const auto ip = attempt == 0 && reuse ? std::optional(pod.pod_ip) : pool_.Allocate();
      if (!ip) break;
      if (!options_.start_workers) {
        state.ip = *ip;
        break;
      }
      FakeWorkerOptions o = WorkerOptions(pod);
      o.address = *ip + ":" + std::to_string(pod.port);
      try {
        auto worker = std::make_shared<FakeWorker>(o);
        worker->Start();
        state.worker = std::move(worker);
        state.ip = *ip;
      } catch (const std::exception& e) {
        // Something else holds it (or the port): round-robin tries it again only after the rest.
        log_.Warn("worker could not listen", {{"pod", pod.key()}, {"error", e.what()}});
        pool_.Release(*ip);
      }
    }
    if (state.ip.empty()) {
      log_.Error("no address for the pod", {{"pod", pod.key()}});
      return false;
    }
    const bool exporter = state.worker != nullptr && state.worker->exporter().has_value();
    log_.Info("pod started", {{"pod", pod.key()},
                              {"ip", state.ip},
                              {"port", pod.port},
                              {"worker", state.worker != nullptr},
                              {"exporter", exporter}});
    const std::lock_guard lock(mu_);
    if (state.worker != nullptr && !exporter) {
      node_workers_->Add(pod.key(),
                         {.node = pod.node_name,
                          .ns = pod.ns,
                          .name = pod.name,
                          .container = pod.containers.empty() || pod.containers[0].first.empty()
                                           ? "main"
                                           : pod.containers[0].first,
                          .gpus = pod.gpus,
                          .worker = state.worker});
    }
    pods_.emplace(pod.key(), std::move(state));
    return true;
  }

  // Patches pods/status when the server's differs from what the agent reports.
  bool Report(const AgentPod& pod) {
    PodState state;
    {
      const std::lock_guard lock(mu_);
      const auto it = pods_.find(pod.key());
      if (it == pods_.end()) return true;
      state = it->second;
    }
    const bool ready = state.want_ready;
    if (pod.phase == "Running" && pod.pod_ip == state.ip && pod.host_ip == options_.host_ip &&
        pod.ready == ready && pod.containers_ready == ready) {
      return true;
    }
    const std::string started = FormatRfc3339(state.start_time);
    json containers = json::array();
    for (const auto& [name, image] : pod.containers) {
      containers.push_back({{"name", name},
                            {"ready", ready},
                            {"started", true},
                            {"restartCount", 0},
                            {"image", image},
                            {"imageID", "fake://" + image},
                            {"containerID", "fake://" + pod.uid + "/" + name},
                            {"state", {{"running", {{"startedAt", started}}}}}});
    }
    const json status = {
        {"phase", "Running"},
        {"podIP", state.ip},
        {"podIPs", json::array({{{"ip", state.ip}}})},
        {"hostIP", options_.host_ip},
        {"startTime", started},
        {"conditions", json::array({Condition("PodScheduled", true, state.start_time),
                                    Condition("Initialized", true, state.start_time),
                                    Condition("ContainersReady", ready, state.ready_since),
                                    Condition("Ready", ready, state.ready_since)})},
        {"containerStatuses", containers}};
    auto patched = client_.Patch(kube::resources::kPods, pod.ns, pod.name, kube::PatchType::kMerge,
                                 {{"status", status}}, "status");
    if (!patched && patched.error().IsNotFound()) return true;  // gone: the delete event follows
    if (!patched) return Failed("patch pod status", pod.key(), patched);
    log_.Info("pod status reported", {{"pod", pod.key()}, {"ip", state.ip}, {"ready", ready}});
    return true;
  }

  kube::Client& client_;
  NodeAgentOptions options_;
  telemetry::Logger log_{"node-agent"};
  AddressPool pool_;  // used by the work thread only
  std::atomic<std::size_t> registered_nodes_{0};
  mutable std::mutex mu_;
  std::unordered_map<std::string, PodState> pods_;  // guarded by mu_; changed by the work thread
  std::shared_ptr<NodeWorkers> node_workers_ = std::make_shared<NodeWorkers>();
  kube::WorkQueue queue_;
  std::vector<std::unique_ptr<kube::Informer<AgentPod>>> informers_;
  std::thread thread_;
};

NodeAgent::NodeAgent(kube::Client& client, NodeAgentOptions options)
    : impl_(std::make_unique<Impl>(client, std::move(options))) {}

NodeAgent::~NodeAgent() { Stop(); }

void NodeAgent::Start() { impl_->Start(); }
void NodeAgent::Stop() { impl_->Stop(); }

bool NodeAgent::WaitForSync(std::chrono::milliseconds timeout) {
  return impl_->WaitForSync(timeout);
}

std::shared_ptr<FakeWorker> NodeAgent::Worker(const std::string& ns,
                                              const std::string& name) const {
  return impl_->Worker(ns + "/" + name);
}

std::string NodeAgent::PodIP(const std::string& ns, const std::string& name) const {
  return impl_->PodIP(ns + "/" + name);
}

bool NodeAgent::SetReady(const std::string& ns, const std::string& name, bool ready) {
  return impl_->SetReady(ns + "/" + name, ready);
}

std::string ProcessAddressBase() { return "127." + std::to_string(20 + getpid() % 200) + ".0.1"; }

}  // namespace eoc::testing
