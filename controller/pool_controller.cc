#include "controller/pool_controller.h"

#include <algorithm>

#include "telemetry/logging.h"

namespace eoc::controller {
namespace {

constexpr const char* kControllerName = "inferencepool";
// The `resource` of the energy exporter pod watches' reflector metrics: apart from the workers'
// "pods", whose staleness /readyz reports.
constexpr const char* kExporterPodsMetric = "exporter-pods";

// Logs each failed list or watch of a resource (the reflector retries with backoff), and passes
// every hook on to the metrics.
class LoggingReflectorHooks final : public kube::ReflectorMetrics {
 public:
  LoggingReflectorHooks(std::string resource, kube::ReflectorMetrics* next)
      : resource_(std::move(resource)), next_(next != nullptr ? next : &none_) {}
  void OnList(std::size_t items) override { next_->OnList(items); }
  void OnWatchStart() override { next_->OnWatchStart(); }
  void OnEvent(kube::WatchEventType type) override { next_->OnEvent(type); }
  void OnStale(bool stale, std::chrono::nanoseconds failing_for) override {
    next_->OnStale(stale, failing_for);
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(failing_for).count();
    if (stale) {
      PoolLog().Error("cache is stale: lists and watches keep failing",
                      {{"resource", resource_}, {"failingForSeconds", seconds}});
    } else {
      PoolLog().Info("cache is fresh again",
                     {{"resource", resource_}, {"failedForSeconds", seconds}});
    }
  }
  void OnInvalidObject(const std::string& key, const std::string& resource_version,
                       const std::string& why) override {
    next_->OnInvalidObject(key, resource_version, why);
    PoolLog().Warn("object left out of the cache", {{"resource", resource_},
                                                    {"object", key},
                                                    {"resourceVersion", resource_version},
                                                    {"error", why}});
  }
  void OnError(const kube::Status& status) override {
    next_->OnError(status);
    if (status.IsNotFound() && resource_ == kInferencePools.QualifiedName()) {
      PoolLog().Error("cannot list InferencePools: is the CRD installed? (kubectl apply -f crds/)",
                      {{"error", status.ToString()}});
    } else {
      PoolLog().Warn("list or watch failed; retrying",
                     {{"resource", resource_}, {"error", status.ToString()}});
    }
  }

 private:
  const std::string resource_;
  kube::ReflectorMetrics none_;
  kube::ReflectorMetrics* const next_;
};

// Logs a reconcile that threw (a bug: it is retried with backoff), and passes every hook on to the
// metrics.
class LoggingControllerHooks final : public kube::ControllerMetrics {
 public:
  explicit LoggingControllerHooks(kube::ControllerMetrics* next)
      : next_(next != nullptr ? next : &none_) {}
  void OnReconcile(kube::ReconcileOutcome outcome, std::chrono::nanoseconds took) override {
    next_->OnReconcile(outcome, took);
  }
  void OnException(const std::string& key, const std::string& what) override {
    next_->OnException(key, what);
    PoolLog().Error("reconcile threw", {{"pool", key}, {"error", what}});
  }

 private:
  kube::ControllerMetrics none_;
  kube::ControllerMetrics* const next_;
};

}  // namespace

PoolController::PoolController(kube::Client& client, kube::EventRecorder& recorder,
                               PoolControllerOptions options, const Clock& clock,
                               KubeMetrics* kube_metrics, PoolMetrics* pool_metrics)
    : options_(std::move(options)),
      config_map_hooks_(std::make_unique<LoggingReflectorHooks>(
          kube::resources::kConfigMaps.QualifiedName(),
          kube_metrics != nullptr ? &kube_metrics->Reflector(kube::resources::kConfigMaps.resource)
                                  : nullptr)),
      sdk_fetcher_(carbon::MakeCarbonFetcher(options_.carbon.sdk_max_in_flight)),
      grid_(std::make_unique<carbon::GridIntensities>(
          client, *sdk_fetcher_,
          [&] {
            carbon::GridIntensitiesOptions o = options_.carbon;
            o.config_map_metrics = config_map_hooks_.get();
            return o;
          }(),
          clock, [this](const std::string& pool) { controller_.Add(pool); })),
      exporter_hooks_(std::make_unique<LoggingReflectorHooks>(
          kExporterPodsMetric,
          kube_metrics != nullptr ? &kube_metrics->Reflector(kExporterPodsMetric) : nullptr)),
      exporters_(std::make_unique<ExporterPods>(
          client,
          ExporterPodsOptions{
              .stale_after = options_.stale_after,
              .metrics = exporter_hooks_.get(),
              .max_selectors_per_namespace = options_.max_exporter_selectors_per_namespace,
              .allowed_namespaces = options_.exporter_namespaces},
          clock, [this](const std::string& pool) { controller_.Add(pool); })),
      status_client_(client),
      scaler_(options_.scales == nullptr
                  ? nullptr
                  : std::make_unique<PoolScaler>(
                        *this, [this](const std::string& key) { return reconciler_.Workers(key); },
                        *options_.scales, recorder,
                        [&] {
                          PoolScalerOptions o = options_.scaler;
                          o.fence = options_.reconcile.fence;
                          o.directory = options_.reconcile.directory;
                          o.changed = [this](const std::string& pool) { controller_.Add(pool); };
                          return o;
                        }(),
                        clock, options_.scaler_metrics)),
      reconciler_(
          *this, status_client_, recorder,
          [&] {
            PoolReconcilerOptions o = options_.reconcile;
            o.grid = grid_.get();
            o.exporters = exporters_.get();
            o.scaling = scaler_.get();
            return o;
          }(),
          clock, pool_metrics),
      controller_hooks_(std::make_unique<LoggingControllerHooks>(
          kube_metrics != nullptr ? &kube_metrics->Controller(kControllerName) : nullptr)),
      // The caches are asked every 50 ms until synced, as before the Controller took over.
      controller_(
          kControllerName, reconciler_,
          {.workers = options_.workers, .sync_poll_period = std::chrono::milliseconds(50)},
          {.clock = &clock,
           .queue_metrics =
               kube_metrics != nullptr ? &kube_metrics->WorkQueue(kControllerName) : nullptr,
           .metrics = controller_hooks_.get()}) {
  auto reflector = [&](const kube::ResourceRef& resource, const std::string& ns) {
    reflector_hooks_.push_back(std::make_unique<LoggingReflectorHooks>(
        resource.QualifiedName(),
        kube_metrics != nullptr ? &kube_metrics->Reflector(resource.resource) : nullptr));
    return kube::ReflectorOptions{.resource = resource,
                                  .ns = ns,
                                  .stale_after = options_.stale_after,
                                  .metrics = reflector_hooks_.back().get()};
  };
  // One informer per namespace when namespaces are given, else one over all of them.
  std::vector<std::string> scopes = options_.namespaces;
  if (scopes.empty()) scopes.emplace_back();
  for (const auto& ns : scopes) {
    pools_.push_back(std::make_unique<kube::Informer<PoolObject>>(
        client, reflector(kInferencePools, ns), ToPoolObject, clock));
    pods_.push_back(std::make_unique<kube::Informer<kube::PodView>>(
        client, reflector(kube::resources::kPods, ns), kube::ToPodView, clock));
  }
  nodes_ = std::make_unique<kube::Informer<kube::NodeView>>(
      client, reflector(kube::resources::kNodes, ""), kube::ToNodeView, clock);
  AddHandlers();
}

PoolController::~PoolController() { Stop(); }

void PoolController::AddHandlers() {
  for (auto& informer : pools_) {
    auto enqueue = [this](const PoolObject& p) { controller_.Add(PoolKey(p.pool)); };
    informer->AddHandlers(
        {.on_add = enqueue,
         .on_update = [enqueue](const PoolObject&, const PoolObject& now) { enqueue(now); },
         .on_delete = enqueue});
  }
  for (auto& informer : pods_) {
    informer->AddHandlers({
        .on_add = [this](const kube::PodView& pod) { EnqueuePoolsSelecting(pod); },
        .on_update =
            [this](const kube::PodView& before, const kube::PodView& now) {
              // Both: a pod whose labels changed may leave one pool and join another.
              EnqueuePoolsSelecting(before);
              if (before.labels != now.labels) EnqueuePoolsSelecting(now);
            },
        .on_delete = [this](const kube::PodView& pod) { EnqueuePoolsSelecting(pod); },
    });
  }
  // Only labels matter (zone, GPU product); a kubelet's status heartbeats are ignored.
  nodes_->AddHandlers({
      .on_add = [this](const kube::NodeView& node) { EnqueuePoolsOnNode(node.name); },
      .on_update =
          [this](const kube::NodeView& before, const kube::NodeView& now) {
            if (before.labels != now.labels) EnqueuePoolsOnNode(now.name);
          },
      .on_delete = [this](const kube::NodeView& node) { EnqueuePoolsOnNode(node.name); },
  });
}

void PoolController::EnqueuePoolsSelecting(const kube::PodView& pod) {
  for (const auto& object : ListPools()) {
    if (Selects(object->pool, pod)) controller_.Add(PoolKey(object->pool));
  }
}

void PoolController::EnqueuePoolsOnNode(const std::string& node) {
  for (const auto& key : reconciler_.PoolsOnNode(node)) controller_.Add(key);
}

void PoolController::EnqueueAll() {
  for (const auto& object : ListPools()) controller_.Add(PoolKey(object->pool));
}

void PoolController::Start() {
  for (auto& i : pools_) i->Start();
  for (auto& i : pods_) i->Start();
  nodes_->Start();
  grid_->Start();
  controller_.Start({[this] { return HasSynced(); }});
  if (scaler_) scaler_->Start({[this] { return HasSynced(); }});
}

void PoolController::Stop() {
  if (scaler_) scaler_->Stop();
  controller_.Stop();
  grid_->Stop();
  exporters_->Stop();
  for (auto& i : pools_) i->Stop();
  for (auto& i : pods_) i->Stop();
  nodes_->Stop();
}

namespace {
template <class Informers>
bool AllSynced(const Informers& informers) {
  return std::all_of(informers.begin(), informers.end(),
                     [](const auto& i) { return i->HasSynced(); });
}
template <class Informers>
bool NoneStale(const Informers& informers) {
  return std::none_of(informers.begin(), informers.end(), [](const auto& i) { return i->Stale(); });
}
}  // namespace

bool PoolController::PoolsSynced() const { return AllSynced(pools_); }
bool PoolController::PodsSynced() const { return AllSynced(pods_); }
bool PoolController::NodesSynced() const { return nodes_->HasSynced(); }
bool PoolController::PoolsFresh() const { return NoneStale(pools_); }
bool PoolController::PodsFresh() const { return NoneStale(pods_); }
bool PoolController::NodesFresh() const { return !nodes_->Stale(); }

bool PoolController::HasSynced() const { return PoolsSynced() && PodsSynced() && NodesSynced(); }

void PoolController::SetLeading(bool leading) {
  if (scaler_) scaler_->SetLeading(leading);
  const bool was = reconciler_.SetLeading(leading);
  if (leading && !was) EnqueueAll();
}

std::shared_ptr<const PoolObject> PoolController::GetPool(const std::string& key) const {
  for (const auto& informer : pools_) {
    if (auto pool = informer->Get(key)) return pool;
  }
  return nullptr;
}

std::vector<std::shared_ptr<const PoolObject>> PoolController::ListPools() const {
  std::vector<std::shared_ptr<const PoolObject>> out;
  for (const auto& informer : pools_) {
    auto part = informer->List();
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::vector<std::shared_ptr<const kube::PodView>> PoolController::ListPods() const {
  std::vector<std::shared_ptr<const kube::PodView>> out;
  for (const auto& informer : pods_) {
    auto part = informer->List();
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::shared_ptr<const kube::NodeView> PoolController::GetNode(const std::string& name) const {
  return nodes_->Get(name);
}

}  // namespace eoc::controller
