#include "controller/pool_reconciler.h"

#include <algorithm>

#include "common/object_meta.h"
#include "common/rfc3339.h"
#include "controller/demand.h"
#include "controller/pool_status.h"
#include "controller/pool_weights.h"
#include "controller/routing_config.h"
#include "telemetry/logging.h"

namespace eoc::controller {
namespace {

const api::Condition* SpecValid(const api::InferencePoolStatus& status) {
  return api::FindCondition(status.conditions, api::kConditionSpecValid);
}

kube::ReconcileResult Done() { return {}; }

// Come back after `wait` (none: not).
kube::ReconcileResult After(std::chrono::nanoseconds wait) {
  return {.requeue_after = std::max(std::chrono::nanoseconds(0), wait)};
}

// The sooner of two requeues (zero: none).
std::chrono::nanoseconds Sooner(std::chrono::nanoseconds a, std::chrono::nanoseconds b) {
  if (a <= std::chrono::nanoseconds(0)) return b;
  if (b <= std::chrono::nanoseconds(0)) return a;
  return std::min(a, b);
}

}  // namespace

kube::ObjectReference PoolReference(const api::InferencePool& pool) {
  return {.kind = std::string(api::kKind),
          .ns = pool.ns,
          .name = pool.name,
          .uid = pool.uid,
          .api_version = std::string(api::kApiVersion)};
}

std::string PoolKey(const api::InferencePool& pool) { return pool.ns + "/" + pool.name; }

const telemetry::Logger& PoolLog() {
  static const telemetry::Logger log("inferencepool");
  return log;
}

PoolObject ToPoolObject(const nlohmann::json& object) {
  return {.pool = api::ParseInferencePool(object),
          .resource_version = ResourceVersionOf(object),
          .demand = DemandAnnotations(object)};
}

kube::Result<nlohmann::json> KubePoolClient::UpdateStatus(const nlohmann::json& pool) {
  return client_.Update(kInferencePools, pool.at("metadata").value("namespace", std::string()),
                        pool, "status");
}

kube::Result<nlohmann::json> KubePoolClient::GetPool(const std::string& ns,
                                                     const std::string& name) {
  return client_.Get(kInferencePools, ns, name);
}

PoolReconciler::PoolReconciler(const PoolStore& store, PoolClient& client, kube::EventSink& events,
                               PoolReconcilerOptions options, const Clock& clock,
                               PoolMetrics* metrics)
    : store_(store),
      client_(client),
      events_(events),
      options_(std::move(options)),
      clock_(clock),
      metrics_(metrics) {}

std::shared_ptr<const PoolMembers> PoolReconciler::Workers(const std::string& pool_key) const {
  const std::lock_guard lock(mu_);
  const auto it = records_.find(pool_key);
  return it == records_.end() ? nullptr : it->second.workers;
}

std::vector<std::string> PoolReconciler::PoolsOnNode(const std::string& node) const {
  std::vector<std::string> keys;
  const std::lock_guard lock(mu_);
  for (const auto& [key, record] : records_) {
    if (record.workers == nullptr) continue;
    const auto& notes = record.workers->notes;
    if (std::any_of(notes.begin(), notes.end(),
                    [&](const WorkerNotes& w) { return w.node == node; })) {
      keys.push_back(key);
    }
  }
  return keys;
}

// A deleted pool: stop serving it and forget it; its workload is left alone.
void PoolReconciler::Forget(const std::string& key) {
  bool known = false;
  {
    const std::lock_guard lock(mu_);
    known = records_.erase(key) > 0;
  }
  // The pick endpoint's table first: picks stop finding the pool before its state retires.
  if (options_.picks != nullptr) options_.picks->Remove(key);
  if (options_.directory != nullptr) options_.directory->Remove(key);
  if (options_.scrape != nullptr) options_.scrape->RemovePool(key);
  if (options_.grid != nullptr) options_.grid->Forget(key);
  if (options_.exporters != nullptr) options_.exporters->Forget(key);
  if (!known) return;
  if (metrics_ != nullptr) {
    const auto [ns, name] = SplitPoolKey(key);
    metrics_->RemovePool(ns, name);
  }
  PoolLog().Info("pool deleted", {{"pool", key}});
}

kube::Result<kube::ReconcileResult> PoolReconciler::Reconcile(const std::string& key) {
  const auto object = store_.GetPool(key);
  if (object == nullptr) {
    Forget(key);
    return Done();
  }
  const api::InferencePool& pool = object->pool;
  std::shared_ptr<const PoolMembers> workers;
  {
    const std::lock_guard lock(mu_);
    workers = records_[key].workers;
  }
  // An invalid spec is not acted on: the pool keeps the workers it had, so picks go on.
  if (pool.errors.empty() || workers == nullptr) {
    auto selected =
        pool.errors.empty()
            ? SelectWorkers(pool, store_.ListPods(),
                            [this](const std::string& node) { return store_.GetNode(node); })
            : PoolMembers{};
    if (workers == nullptr || *workers != selected) {
      workers = std::make_shared<const PoolMembers>(std::move(selected));
      const std::lock_guard lock(mu_);
      records_[key].workers = workers;
    }
  }
  if (options_.directory != nullptr && pool.errors.empty()) {
    UpdatePoolDirectory(*options_.directory, options_.picks, pool, workers->workers, clock_.Now());
  }
  carbon::ZoneReadings grid;
  if (pool.errors.empty()) grid = ReadGrid(key, pool, workers->workers);
  ExporterRead exporter_refusal;
  // After the directory, so that the loop's first scrapes find the pool's state (and its marks).
  if (options_.scrape != nullptr && pool.errors.empty()) {
    options_.scrape->SetPool(
        ScrapePoolOf(pool, *workers, grid.intensity, ReadExporters(key, pool, &exporter_refusal)));
  }
  if (metrics_ != nullptr) {
    metrics_->SetWorkers(pool.ns, pool.name, workers->workers.size());
    metrics_->SetRoutingWeights(pool.ns, pool.name, pool.status.routing);
  }
  // Every replica tracks the pools to scale, so that whichever leads has them.
  if (options_.scaling != nullptr && pool.errors.empty() && pool.spec.autoscaling.enabled &&
      pool.spec.scale_target_ref) {
    options_.scaling->Track(key);
  }
  if (!leading_.load()) return Done();
  {
    const std::lock_guard lock(mu_);
    RecordAnnotationErrors(pool, *workers, records_[key]);
  }
  if (!pool.errors.empty()) return Publish(*object, workers->workers, {});
  StatusInputs inputs{.missing_profiles = MissingEnergyProfiles(pool.spec, workers->workers),
                      .exporter_refused = std::move(exporter_refusal.refused),
                      .exporter_not_allowed = exporter_refusal.not_allowed};
  if (pool.spec.carbon.has_source()) inputs.carbon = grid;
  if (options_.directory != nullptr) {
    const auto state = options_.directory->Find(key);
    if (const auto index = state ? state->prefix_index() : nullptr) {
      inputs.prefix_share = index->Share();
    }
  }
  if (options_.scaling != nullptr) inputs.scaling = options_.scaling->Report(key);
  if (options_.scrape != nullptr) {
    // Before a first scrape has finished, every worker would count as unavailable.
    const auto summary = options_.scrape->Summary(key);
    if (summary && (summary->scrapes > 0 || summary->total == 0)) inputs.scrapes = summary;
  }
  std::vector<routing::Worker> weighed = Weigh(key, pool, workers->workers, grid.intensity);
  // The workers a scale-in drains are published as draining: no new work, their sessions move.
  if (inputs.scaling) MarkDraining(weighed, inputs.scaling->draining);
  auto result = Publish(*object, weighed, inputs);
  if (!result || workers->workers.empty() || !kube::MayWrite(options_.fence)) return result;
  // Weights follow the loads: weigh again after the next scrape round at the latest (not once
  // the Lease is lost: a leader again reconciles every pool).
  result->requeue_after = Sooner(result->requeue_after, pool.spec.metrics.Interval());
  return result;
}

carbon::ZoneReadings PoolReconciler::ReadGrid(const std::string& key,
                                              const api::InferencePool& pool,
                                              const std::vector<routing::Worker>& workers) {
  std::vector<std::string> zones;  // one per zoned worker: the source sorts them and drops repeats
  for (const routing::Worker& w : workers) {
    if (!w.capability.zone.empty()) zones.push_back(w.capability.zone);
  }
  if (options_.grid != nullptr) return options_.grid->Track(key, pool, zones);
  return carbon::StaticReadings(pool.spec.carbon, zones, clock_.Now());
}

NodeExporters PoolReconciler::ReadExporters(const std::string& key, const api::InferencePool& pool,
                                            ExporterRead* refusal) const {
  if (options_.exporters == nullptr) return {};
  ExporterRead read = options_.exporters->Track(key, pool);  // also when none: a watch may go
  refusal->refused = std::move(read.refused);
  refusal->not_allowed = read.not_allowed;
  const auto& exporter = pool.spec.energy.exporter;
  if (!exporter) return {};
  return ExportersByNode(read.pods, exporter->port, exporter->path);
}

std::vector<routing::Worker> PoolReconciler::Weigh(
    const std::string& key, const api::InferencePool& pool,
    const std::vector<routing::Worker>& workers,
    const std::map<std::string, double>& grid_g_per_kwh) {
  std::vector<routing::PoolState::ObservedLoad> observed;
  if (options_.directory != nullptr) {
    if (const auto state = options_.directory->Find(key)) observed = state->Loads();
  }
  const std::lock_guard lock(mu_);
  PoolRecord& record = records_[key];
  if (!record.keeper) record.keeper.emplace(pool.spec.metrics.Interval());
  return WeighWorkers(pool.spec, workers, observed, grid_g_per_kwh, *record.keeper, clock_.Now());
}

void PoolReconciler::StatusWritten(StatusWrite outcome) {
  if (metrics_ != nullptr) metrics_->StatusWritten(outcome);
}

kube::Result<kube::ReconcileResult> PoolReconciler::Publish(
    const PoolObject& object, const std::vector<routing::Worker>& workers,
    const StatusInputs& inputs) {
  const std::string key = PoolKey(object.pool);
  PoolObject current = object;
  kube::Status conflict;
  for (int attempt = 0; attempt < std::max(1, options_.max_conflict_attempts); ++attempt) {
    const std::string now = FormatRfc3339(clock_.WallNow());
    const Clock::TimePoint steady = clock_.Now();
    StatusInputs in = inputs;
    std::chrono::nanoseconds wait{0};  // until a table not yet due may be published
    if (current.pool.errors.empty()) {
      Clock::TimePoint published_at;
      {
        const std::lock_guard lock(mu_);
        // Not written since this replica leads: as if long enough ago for anything material.
        published_at = records_[key].table_written.value_or(
            steady - std::max<std::chrono::nanoseconds>(
                         std::chrono::seconds(current.pool.spec.routing.publish_interval_seconds),
                         std::chrono::seconds(1)));
      }
      const routing::PublishDecision decision =
          DecideTablePublish(current.pool, PublishedWorkers(workers), published_at, steady);
      in.keep_table = !decision.publish();
      if (decision.verdict == routing::PublishVerdict::kNotYet) wait = decision.earliest - steady;
    }
    api::InferencePoolStatus next = DesiredStatus(current.pool, workers, now, in);
    if (next == current.pool.status) return After(wait);
    {  // at most one write per interval per pool: a change inside it waits for the rest
      const std::lock_guard lock(mu_);
      const auto since = steady - records_[key].last_write;
      if (since < options_.min_publish_interval) {
        return After(Sooner(wait, options_.min_publish_interval - since));
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
      StatusWritten(StatusWrite::kNotLeader);
      return Done();  // a leader again reconciles every pool
    }
    auto written = client_.UpdateStatus(body);
    if (written) {
      StatusWritten(StatusWrite::kWritten);
      {
        const std::lock_guard lock(mu_);
        PoolRecord& record = records_[key];
        record.last_write = clock_.Now();
        if (next.routing != current.pool.status.routing) record.table_written = record.last_write;
      }
      if (options_.directory != nullptr && current.pool.errors.empty() &&
          next.routing != current.pool.status.routing) {
        // The leader routes from the table it has just written at once, as the other replicas
        // will when its watch event reaches them.
        api::InferencePool published = current.pool;
        published.status = next;
        UpdatePoolDirectory(*options_.directory, options_.picks, published, workers, clock_.Now());
      }
      RecordSpecEvents(current.pool, next);
      return After(wait);
    }
    const kube::Status& error = written.error();
    if (error.IsNotFound()) return Done();  // deleted meanwhile
    if (!error.IsConflict()) {
      StatusWritten(StatusWrite::kError);
      PoolLog().Warn("status write failed", {{"pool", key}, {"error", error.ToString()}});
      return error;
    }
    StatusWritten(StatusWrite::kConflict);
    conflict = error;
    auto fresh = client_.GetPool(current.pool.ns, current.pool.name);
    if (!fresh) {
      if (fresh.error().IsNotFound()) return Done();
      PoolLog().Warn("pool read failed", {{"pool", key}, {"error", fresh.error().ToString()}});
      return fresh.error();
    }
    current = ToPoolObject(*fresh);
  }
  PoolLog().Warn("status write kept conflicting", {{"pool", key}});
  return conflict;
}

void PoolReconciler::RecordSpecEvents(const api::InferencePool& pool,
                                      const api::InferencePoolStatus& written) {
  const api::Condition* before = SpecValid(pool.status);
  const api::Condition* after = SpecValid(written);
  if (after == nullptr) return;
  if (after->status == "False" &&
      (before == nullptr || before->status != "False" || before->message != after->message)) {
    events_.Record(PoolReference(pool), kube::EventType::kWarning, reasons::kSpecInvalid,
                   after->message);
    PoolLog().Warn("invalid spec", {{"pool", PoolKey(pool)}, {"error", after->message}});
  } else if (after->status == "True" && before != nullptr && before->status == "False") {
    events_.Record(PoolReference(pool), kube::EventType::kNormal, reasons::kSpecValid,
                   "the spec is valid again");
  }
}

void PoolReconciler::RecordAnnotationErrors(const api::InferencePool& pool,
                                            const PoolMembers& members, PoolRecord& record) {
  std::unordered_map<std::string, std::string> now;
  for (std::size_t i = 0; i < members.workers.size(); ++i) {
    const std::string& error = members.notes[i].annotation_error;
    if (error.empty()) continue;
    const std::string pod(PodName(members.workers[i]));
    const auto it = record.annotation_errors.find(pod);
    if (it == record.annotation_errors.end() || it->second != error) {
      std::string message = "pod ";
      message.append(pod).append(": ").append(error);
      events_.Record(PoolReference(pool), kube::EventType::kWarning, "InvalidAnnotation", message);
    }
    now.emplace(pod, error);
  }
  record.annotation_errors = std::move(now);
}

}  // namespace eoc::controller
