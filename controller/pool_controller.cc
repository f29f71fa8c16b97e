#include "controller/pool_controller.h"

#include <algorithm>

#include "common/rfc3339.h"
#include "controller/pool_status.h"
#include "telemetry/logging.h"

namespace eoc::controller {
namespace {

using std::chrono::steady_clock;

const telemetry::Logger& Log() {
  static const telemetry::Logger log("inferencepool");
  return log;
}

std::string KeyOf(const std::string& ns, const std::string& name) { return ns + "/" + name; }

const api::Condition* SpecValid(const api::InferencePoolStatus& status) {
  return api::FindCondition(status.conditions, api::kConditionSpecValid);
}

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
      Log().Error("cache is stale: lists and watches keep failing",
                  {{"resource", resource_}, {"failingForSeconds", seconds}});
    } else {
      Log().Info("cache is fresh again", {{"resource", resource_}, {"failedForSeconds", seconds}});
    }
  }
  void OnInvalidObject(const std::string& key, const std::string& resource_version,
                       const std::string& why) override {
    next_->OnInvalidObject(key, resource_version, why);
    Log().Warn("object left out of the cache", {{"resource", resource_},
                                                {"object", key},
                                                {"resourceVersion", resource_version},
                                                {"error", why}});
  }
  void OnError(const kube::Status& status) override {
    next_->OnError(status);
    if (status.IsNotFound() && resource_ == kInferencePools.QualifiedName()) {
      Log().Error("cannot list InferencePools: is the CRD installed? (kubectl apply -f crds/)",
                  {{"error", status.ToString()}});
    } else {
      Log().Warn("list or watch failed; retrying",
                 {{"resource", resource_}, {"error", status.ToString()}});
    }
  }

 private:
  const std::string resource_;
  kube::ReflectorMetrics none_;
  kube::ReflectorMetrics* const next_;
};

}  // namespace

PoolObject ToPoolObject(const nlohmann::json& object) {
  return {.pool = api::ParseInferencePool(object), .resource_version = ResourceVersionOf(object)};
}

PoolController::PoolController(kube::Client& client, kube::EventRecorder& recorder,
                               PoolControllerOptions options, const Clock& clock,
                               KubeMetrics* kube_metrics, PoolMetrics* pool_metrics)
    : client_(client),
      recorder_(recorder),
      options_(std::move(options)),
      clock_(clock),
      metrics_(pool_metrics),
      queue_("inferencepool", clock, nullptr,
             kube_metrics != nullptr ? &kube_metrics->WorkQueue("inferencepool") : nullptr) {
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
        client_, reflector(kInferencePools, ns), ToPoolObject, clock_));
    pods_.push_back(std::make_unique<kube::Informer<kube::PodView>>(
        client_, reflector(kube::resources::kPods, ns), kube::ToPodView, clock_));
  }
  nodes_ = std::make_unique<kube::Informer<kube::NodeView>>(
      client_, reflector(kube::resources::kNodes, ""), kube::ToNodeView, clock_);
  AddHandlers();
}

PoolController::~PoolController() { Stop(); }

void PoolController::AddHandlers() {
  for (auto& informer : pools_) {
    auto enqueue = [this](const PoolObject& p) { queue_.Add(KeyOf(p.pool.ns, p.pool.name)); };
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
    if (Selects(object->pool, pod)) queue_.Add(KeyOf(object->pool.ns, object->pool.name));
  }
}

void PoolController::EnqueuePoolsOnNode(const std::string& node) {
  std::vector<std::string> keys;
  {
    const std::lock_guard lock(mu_);
    for (const auto& [key, record] : records_) {
      if (record.workers == nullptr) continue;
      const auto& ws = *record.workers;
      if (std::any_of(ws.begin(), ws.end(), [&](const Worker& w) { return w.node == node; })) {
        keys.push_back(key);
      }
    }
  }
  for (const auto& key : keys) queue_.Add(key);
}

void PoolController::EnqueueAll() {
  for (const auto& object : ListPools()) queue_.Add(KeyOf(object->pool.ns, object->pool.name));
}

void PoolController::Start() {
  for (auto& i : pools_) i->Start();
  for (auto& i : pods_) i->Start();
  nodes_->Start();
  for (int i = 0; i < options_.workers; ++i) {
    workers_.emplace_back([this] { RunWorker(); });
  }
}

void PoolController::Stop() {
  if (stopping_.exchange(true)) return;
  queue_.ShutDown();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
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

bool PoolController::WaitUntilSynced() {
  while (!stopping_.load()) {
    if (HasSynced()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void PoolController::RunWorker() {
  if (!WaitUntilSynced()) return;
  while (auto key = queue_.Get()) {
    const auto started = steady_clock::now();
    ReconcileResult result = ReconcileResult::kError;
    try {
      result = Reconcile(*key);
    } catch (const std::exception& e) {  // a bug, not a state of the world: say so, retry later
      Log().Error("reconcile threw", {{"pool", *key}, {"error", e.what()}});
    }
    if (result == ReconcileResult::kError) {
      queue_.AddRateLimited(*key);
    } else {
      queue_.Forget(*key);
    }
    queue_.Done(*key);
    if (metrics_ != nullptr) metrics_->Reconciled(result, steady_clock::now() - started);
  }
}

void PoolController::SetLeading(bool leading) {
  const bool was = leading_.exchange(leading);
  if (leading && !was) EnqueueAll();
}

std::shared_ptr<const std::vector<Worker>> PoolController::Workers(
    const std::string& pool_key) const {
  const std::lock_guard lock(mu_);
  const auto it = records_.find(pool_key);
  return it == records_.end() ? nullptr : it->second.workers;
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

std::vector<Worker> PoolController::SelectWorkers(const api::InferencePool& pool) const {
  return controller::SelectWorkers(pool, ListPods(),
                                   [this](const std::string& node) { return nodes_->Get(node); });
}

ReconcileResult PoolController::Reconcile(const std::string& key) {
  const auto object = GetPool(key);
  if (object == nullptr) {  // deleted: stop serving it and forget it; its workload is left alone
    bool known = false;
    {
      const std::lock_guard lock(mu_);
      known = records_.erase(key) > 0;
    }
    if (known) {
      const auto slash = key.find('/');
      if (metrics_ != nullptr) metrics_->RemovePool(key.substr(0, slash), key.substr(slash + 1));
      Log().Info("pool deleted", {{"pool", key}});
    }
    return ReconcileResult::kSuccess;
  }
  const api::InferencePool& pool = object->pool;
  std::shared_ptr<const std::vector<Worker>> workers;
  {
    const std::lock_guard lock(mu_);
    workers = records_[key].workers;
  }
  // An invalid spec is not acted on: the pool keeps the workers it had, so picks go on.
  if (pool.errors.empty() || workers == nullptr) {
    auto selected = pool.errors.empty() ? SelectWorkers(pool) : std::vector<Worker>{};
    if (workers == nullptr || *workers != selected) {
      workers = std::make_shared<const std::vector<Worker>>(std::move(selected));
      const std::lock_guard lock(mu_);
      records_[key].workers = workers;
    }
  }
  if (metrics_ != nullptr) metrics_->SetWorkers(pool.ns, pool.name, workers->size());
  if (!leading_.load()) return ReconcileResult::kSuccess;
  {
    const std::lock_guard lock(mu_);
    RecordAnnotationErrors(pool, *workers, records_[key]);
  }
  return Publish(*object, *workers);
}

ReconcileResult PoolController::Publish(const PoolObject& object,
                                        const std::vector<Worker>& workers) {
  const std::string key = KeyOf(object.pool.ns, object.pool.name);
  PoolObject current = object;
  for (int attempt = 0; attempt < std::max(1, options_.max_conflict_attempts); ++attempt) {
    const std::string now = FormatRfc3339(clock_.WallNow());
    api::InferencePoolStatus next = DesiredStatus(current.pool, workers, now);
    if (next == current.pool.status) return ReconcileResult::kSuccess;
    {  // at most one write a second per pool: a change inside that waits for the rest
      const std::lock_guard lock(mu_);
      const auto since = clock_.Now() - records_[key].last_write;
      if (since < options_.min_publish_interval) {
        queue_.AddAfter(key, options_.min_publish_interval - since);
        return ReconcileResult::kRequeue;
      }
    }
    const nlohmann::json body = {{"apiVersion", api::kApiVersion},
                                 {"kind", api::kKind},
                                 {"metadata",
                                  {{"name", current.pool.name},
                                   {"namespace", current.pool.ns},
                                   {"resourceVersion", current.resource_version}}},
                                 {"status", api::ToJson(next)}};
    if (!kube::MayWrite(options_.fence)) {
      if (metrics_ != nullptr) metrics_->StatusWritten(StatusWrite::kNotLeader);
      return ReconcileResult::kSuccess;  // a leader again reconciles every pool
    }
    auto written = client_.Update(kInferencePools, current.pool.ns, body, "status");
    if (written) {
      if (metrics_ != nullptr) metrics_->StatusWritten(StatusWrite::kWritten);
      {
        const std::lock_guard lock(mu_);
        records_[key].last_write = clock_.Now();
      }
      RecordSpecEvents(current.pool, next);
      return ReconcileResult::kSuccess;
    }
    const kube::Status& error = written.error();
    if (error.IsNotFound()) return ReconcileResult::kSuccess;  // deleted meanwhile
    if (!error.IsConflict()) {
      if (metrics_ != nullptr) metrics_->StatusWritten(StatusWrite::kError);
      Log().Warn("status write failed", {{"pool", key}, {"error", error.ToString()}});
      return ReconcileResult::kError;
    }
    if (metrics_ != nullptr) metrics_->StatusWritten(StatusWrite::kConflict);
    auto fresh = client_.Get(kInferencePools, current.pool.ns, current.pool.name);
    if (!fresh) {
      if (fresh.error().IsNotFound()) return ReconcileResult::kSuccess;
      Log().Warn("pool read failed", {{"pool", key}, {"error", fresh.error().ToString()}});
      return ReconcileResult::kError;
    }
    current = ToPoolObject(*fresh);
  }
  Log().Warn("status write kept conflicting", {{"pool", key}});
  return ReconcileResult::kError;
}

kube::ObjectReference PoolController::Reference(const api::InferencePool& pool) const {
  return {.kind = std::string(api::kKind),
          .ns = pool.ns,
          .name = pool.name,
          .uid = pool.uid,
          .api_version = std::string(api::kApiVersion)};
}

void PoolController::RecordSpecEvents(const api::InferencePool& pool,
                                      const api::InferencePoolStatus& written) {
  const api::Condition* before = SpecValid(pool.status);
  const api::Condition* after = SpecValid(written);
  if (after == nullptr) return;
  if (after->status == "False" &&
      (before == nullptr || before->status != "False" || before->message != after->message)) {
    recorder_.Record(Reference(pool), kube::EventType::kWarning, reasons::kSpecInvalid,
                     after->message);
    Log().Warn("invalid spec", {{"pool", KeyOf(pool.ns, pool.name)}, {"error", after->message}});
  } else if (after->status == "True" && before != nullptr && before->status == "False") {
    recorder_.Record(Reference(pool), kube::EventType::kNormal, reasons::kSpecValid,
                     "the spec is valid again");
  }
}

void PoolController::RecordAnnotationErrors(const api::InferencePool& pool,
                                            const std::vector<Worker>& workers,
                                            PoolRecord& record) {
  std::unordered_map<std::string, std::string> now;
  for (const auto& w : workers) {
    if (w.annotation_error.empty()) continue;
    const auto it = record.annotation_errors.find(w.pod);
    if (it == record.annotation_errors.end() || it->second != w.annotation_error) {
      recorder_.Record(Reference(pool), kube::EventType::kWarning, "InvalidAnnotation",
                       "pod " + w.pod + ": " + w.annotation_error);
    }
    now.emplace(w.pod, w.annotation_error);
  }
  record.annotation_errors = std::move(now);
}

}  // namespace eoc::controller
