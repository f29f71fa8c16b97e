// Each pool's energy exporter pods (spec.energy.exporter: the dcgm-exporter or Kepler DaemonSet
// whose pod on a worker's node reads that worker's watts), as the reconcile reads them. Nothing
// here waits on the network.
//
//   ExporterPods exporters(client, {}, RealClock(),
//                          [&](const std::string& pool) { queue.Add(pool); });
//   auto pods = exporters.Track("prod/chat", pool);   // the exporter's pods, from a cache
//   NodeExporters by_node = ExportersByNode(pods, exporter.port, exporter.path);
//   exporters.Forget("prod/chat");
//
// One informer (a list and watch by label selector) per namespace and selector that some pool
// names, started by the first pool that asks and stopped when the last one that asked forgets
// it or names another. When one of its pods comes, goes, or changes where and whether it serves
// (node, IP, readiness, deletion), `changed` is called with each pool that reads it, on the
// informer's thread.
//
// A pool reads exporter pods in its own namespace, or in one the operator allows
// (allowed_namespaces: --exporter-namespaces, which the chart sets to rbac.exporterNamespaces, the
// namespaces it grants the pods' read in): a pool naming any other gets no watch and no pods, and
// the answer says which namespace is not allowed and which flag allows it. Else a tenant could make
// the operator read, and report on, pods in a namespace the tenant cannot see.
//
// The pools of one namespace may name at most max_selectors_per_namespace distinct exporters
// (namespace and selector; common/namespace_cap.h): a pool that would pass the cap gets no watch
// and no pods, and the answer says why, naming the flag; it is taken at a later Track once there
// is room.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "api/inference_pool.h"
#include "common/clock.h"
#include "common/namespace_cap.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/pod_view.h"
#include "kube/shared_informers.h"

namespace eoc::controller {

// A pool's exporter pods, as Track gives them.
struct ExporterRead {
  std::vector<std::shared_ptr<const kube::PodView>> pods;
  // Why the exporter is not watched (its namespace is not allowed, or the pool's namespace is at
  // its cap); empty when it is.
  std::string refused;
  // It is not watched because its namespace is not allowed.
  bool not_allowed = false;
};

// Why `pool` may not read the exporter pods its spec.energy.exporter names: "" when it names none,
// or names its own namespace or one of `allowed`; else a message naming the namespace and the flag.
std::string ExporterNamespaceRefusal(const api::InferencePool& pool,
                                     const std::set<std::string>& allowed);

// What the reconcile asks; thread-safe.
class ExporterSource {
 public:
  virtual ~ExporterSource() = default;
  // The pods that pool.spec.energy.exporter selects in its namespace (the pool's, unless it names
  // one), watched from now on for the pool. None for a pool without an exporter, until the watch
  // has its first list, while that namespace is not allowed, and while the pool's namespace is at
  // its cap.
  virtual ExporterRead Track(const std::string& pool_key, const api::InferencePool& pool) = 0;
  // The pool is gone: its watch goes too when no other pool reads it.
  virtual void Forget(const std::string& pool_key) = 0;
};

struct ExporterPodsOptions {
  // A watch failing this long without a success is stale (its log and metric say so).
  std::chrono::milliseconds stale_after{std::chrono::seconds(60)};
  // The watches' reflector hooks (failed lists and watches: logged, counted); null: none.
  // Called from every watch's thread; must outlive this.
  kube::ReflectorMetrics* metrics = nullptr;
  // Distinct exporters (namespace and selector) the pools of one namespace may name.
  std::size_t max_selectors_per_namespace = 4;
  // Namespaces besides its own whose exporter pods any pool may read (--exporter-namespaces).
  std::set<std::string> allowed_namespaces;
};

class ExporterPods final : public ExporterSource {
 public:
  using Changed = std::function<void(const std::string& pool_key)>;

  // `client` and `clock` must outlive this; `changed` may be empty.
  ExporterPods(kube::Client& client, ExporterPodsOptions options, const Clock& clock,
               Changed changed);
  ~ExporterPods() override;  // Stop()s
  ExporterPods(const ExporterPods&) = delete;
  ExporterPods& operator=(const ExporterPods&) = delete;
  ExporterPods(ExporterPods&&) = delete;
  ExporterPods& operator=(ExporterPods&&) = delete;

  // Ends every watch; Track() then starts none and returns no pods.
  void Stop();

  ExporterRead Track(const std::string& pool_key, const api::InferencePool& pool) override;
  void Forget(const std::string& pool_key) override;

  // The watches running now (for tests): one per namespace and selector in use.
  std::size_t Watches() const;

 private:
  using Watch = kube::Informer<kube::PodView>;

  // A started watch of the pods `selector` picks in `ns`, whose changes notify the pools that
  // read `key`.
  std::unique_ptr<Watch> MakeWatch(const std::string& key, const std::string& ns,
                                   const std::string& selector);
  // Calls `changed` for every pool that reads the watch of `key`.
  void NotifyPools(const std::string& key);

  kube::Client& client_;
  const ExporterPodsOptions options_;
  const Clock& clock_;
  const Changed changed_;

  mutable std::mutex mu_;
  bool stopped_ = false;  // guarded by mu_
  // By "namespace?selector", the pools by key; guarded by mu_.
  kube::SharedInformers<kube::PodView> watches_;
  NamespaceCap selectors_;  // guarded by mu_
};

}  // namespace eoc::controller
