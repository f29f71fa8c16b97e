#include "controller/exporter_pods.h"

#include <map>
#include <utility>

#include "common/text.h"
#include "kube/types.h"

namespace eoc::controller {
namespace {

// Whether a change of an exporter pod can move which pod serves a node, or where: not its
// labels' or annotations' edits, nor a status write that leaves readiness as it was.
bool MovesService(const kube::PodView& before, const kube::PodView& now) {
  return before.node_name != now.node_name || before.pod_ip != now.pod_ip ||
         before.ready != now.ready || before.phase != now.phase ||
         before.terminating() != now.terminating();
}

}  // namespace

std::string ExporterNamespaceRefusal(const api::InferencePool& pool,
                                     const std::set<std::string>& allowed) {
  const auto& exporter = pool.spec.energy.exporter;
  if (!exporter || exporter->namespace_name.empty() || exporter->namespace_name == pool.ns ||
      allowed.contains(exporter->namespace_name)) {
    return "";
  }
  return "its namespace " + Quoted(exporter->namespace_name) +
         " is not allowed: a pool reads exporter pods in its own namespace, or in one that "
         "--exporter-namespaces names (the chart's rbac.exporterNamespaces)";
}

ExporterPods::ExporterPods(kube::Client& client, ExporterPodsOptions options, const Clock& clock,
                           Changed changed)
    : client_(client),
      options_(std::move(options)),
      clock_(clock),
      changed_(std::move(changed)),
      selectors_({.limit = options_.max_selectors_per_namespace,
                  .what = "exporters (spec.energy.exporter namespace and selector)",
                  .flag = "--max-exporter-selectors-per-namespace"}) {}

ExporterPods::~ExporterPods() { Stop(); }

void ExporterPods::Stop() {
  std::map<std::string, std::unique_ptr<Watch>> watches;
  {
    const std::lock_guard lock(mu_);
    stopped_ = true;
    watches = watches_.TakeAll();
  }
  watches.clear();  // joins their threads, whose handlers may be waiting for mu_
}

std::unique_ptr<ExporterPods::Watch> ExporterPods::MakeWatch(const std::string& key,
                                                             const std::string& ns,
                                                             const std::string& selector) {
  auto watch = std::make_unique<Watch>(client_,
                                       kube::ReflectorOptions{.resource = kube::resources::kPods,
                                                              .ns = ns,
                                                              .label_selector = selector,
                                                              .stale_after = options_.stale_after,
                                                              .metrics = options_.metrics},
                                       kube::ToPodView, clock_);
  const auto notify = [this, key] { NotifyPools(key); };
  watch->AddHandlers({.on_add = [notify](const kube::PodView&) { notify(); },
                      .on_update =
                          [notify](const kube::PodView& before, const kube::PodView& now) {
                            if (MovesService(before, now)) notify();
                          },
                      .on_delete = [notify](const kube::PodView&) { notify(); }});
  watch->Start();
  return watch;
}

ExporterRead ExporterPods::Track(const std::string& pool_key, const api::InferencePool& pool) {
  const auto& exporter = pool.spec.energy.exporter;
  std::string ns;
  std::string selector;
  std::string key;  // "namespace?selector": the watch, none without an exporter
  if (exporter) {
    ns = exporter->namespace_name.empty() ? pool.ns : exporter->namespace_name;
    selector = exporter->selector.ToString();
    key = ns + "?" + selector;
  }
  ExporterRead read;
  // An exporter in a namespace not allowed is not watched, nor counted at the cap.
  read.refused = ExporterNamespaceRefusal(pool, options_.allowed_namespaces);
  read.not_allowed = !read.refused.empty();
  if (read.not_allowed) key.clear();
  std::unique_ptr<Watch> unused;
  {
    const std::lock_guard lock(mu_);
    if (stopped_) return {};
    // Past its namespace's cap, the pool's exporter is not watched.
    if (std::string full = selectors_.Use(pool_key, pool.ns, key); !full.empty()) {
      read.refused = std::move(full);
      key.clear();
    }
    const Watch* watch = watches_.Use(
        pool_key, key, [&] { return MakeWatch(key, ns, selector); }, unused);
    if (watch != nullptr && watch->HasSynced()) read.pods = watch->List();
  }
  unused.reset();  // stops it without the lock
  return read;
}

void ExporterPods::Forget(const std::string& pool_key) {
  std::unique_ptr<Watch> unused;
  {
    const std::lock_guard lock(mu_);
    unused = watches_.Forget(pool_key);
    selectors_.Forget(pool_key);
  }
  unused.reset();  // stops it without the lock
}

std::size_t ExporterPods::Watches() const {
  const std::lock_guard lock(mu_);
  return watches_.size();
}

void ExporterPods::NotifyPools(const std::string& key) {
  if (!changed_) return;
  std::vector<std::string> pools;
  {
    const std::lock_guard lock(mu_);
    pools = watches_.Users(key);
  }
  for (const std::string& pool_key : pools) changed_(pool_key);
}

}  // namespace eoc::controller
