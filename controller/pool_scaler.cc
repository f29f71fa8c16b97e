#include "controller/pool_scaler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "common/rfc3339.h"
#include "controller/pool_scaler_state.h"
#include "telemetry/logging.h"

namespace eoc::controller {
namespace {

const telemetry::Logger& Log() {
  static const telemetry::Logger log("autoscaler");
  return log;
}

}  // namespace

autoscale::PolicyConfig PolicyOf(const api::AutoscalingSpec& a) {
  return {.min_replicas = a.min_replicas,
          .max_replicas = a.max_replicas.value_or(a.min_replicas),
          .target_ongoing_requests = a.target_ongoing_requests,
          .upscale_delay_seconds = a.upscale_delay_seconds,
          .downscale_delay_seconds = a.downscale_delay_seconds,
          .downscale_to_zero_delay_seconds = a.downscale_to_zero_delay_seconds,
          .upscaling_factor = a.upscaling_factor,
          .downscaling_factor = a.downscaling_factor};
}

PoolScaler::PoolScaler(const PoolStore& store, MembersLookup members, ScaleClient& scales,
                       kube::EventSink& events, PoolScalerOptions options, const Clock& clock,
                       ScalerMetrics* metrics)
    : store_(store),
      members_(std::move(members)),
      scales_(scales),
      events_(events),
      options_(std::move(options)),
      clock_(clock),
      metrics_(metrics),
      epoch_(clock.Now()),
      own_demand_(DemandAnnotationKey(options_.replica)),
      controller_("autoscaler", *this, {.workers = 1}, {.clock = &clock}) {}

PoolScaler::~PoolScaler() { Stop(); }

void PoolScaler::Start(std::vector<kube::Controller::SyncedCheck> synced) {
  controller_.Start(std::move(synced));
}

void PoolScaler::Stop() { controller_.Stop(); }

double PoolScaler::Seconds(Clock::TimePoint t) const {
  return std::chrono::duration<double>(t - epoch_).count();
}

void PoolScaler::SetLeading(bool leading) {
  std::vector<std::string> keys;
  {
    const std::lock_guard lock(mu_);
    if (leading_ == leading) return;
    leading_ = leading;
    states_.clear();
    reports_.clear();
    if (leading) keys.assign(tracked_.begin(), tracked_.end());
  }
  for (const std::string& key : keys) controller_.Add(key);
}

void PoolScaler::Track(const std::string& pool_key) {
  bool added = false;
  {
    const std::lock_guard lock(mu_);
    added = tracked_.insert(pool_key).second && leading_;
  }
  if (added) controller_.Add(pool_key);
}

std::optional<ScalingReport> PoolScaler::Report(const std::string& pool_key) const {
  const std::lock_guard lock(mu_);
  const auto it = reports_.find(pool_key);
  if (it == reports_.end()) return std::nullopt;
  return it->second;
}

void PoolScaler::Untrack(const std::string& key, const api::InferencePool* pool) {
  bool had_report = false;
  {
    const std::lock_guard lock(mu_);
    tracked_.erase(key);
    states_.erase(key);
    had_report = reports_.erase(key) > 0;
  }
  demand_.Forget(key);
  if (metrics_ != nullptr) {
    const auto [ns, name] = SplitPoolKey(key);
    metrics_->RemovePool(ns, name);
  }
  if (had_report && pool != nullptr && options_.changed) options_.changed(key);
}

std::shared_ptr<PoolScaler::State> PoolScaler::StateFor(const std::string& key,
                                                        const api::InferencePool& pool) {
  const std::lock_guard lock(mu_);
  if (!leading_) return nullptr;
  auto& slot = states_[key];
  if (!slot) {
    // A fresh start (this replica just began leading, or the pool is new): what the pool last
    // wrote is in its status.
    slot = std::make_shared<State>();
    slot->written = pool.status.desired_replicas;
    slot->target = pool.status.desired_replicas.value_or(0);
    slot->last_scale_time = pool.status.last_scale_time;
  }
  return slot;
}

// status.desiredReplicas: in Recommend mode the recommendation; otherwise what /scale was set to.
std::optional<std::int32_t> PoolScaler::StatusReplicas(const api::InferencePool& pool,
                                                       const State& s) {
  if (pool.spec.autoscaling.mode == api::ScalingMode::kRecommend) return s.target;
  return s.written;
}

void PoolScaler::ReportScale(const std::string& key, const api::InferencePool& pool, State& s) {
  const std::lock_guard lock(mu_);
  const auto it = reports_.find(key);
  if (!leading_ || it == reports_.end()) return;
  it->second.desired_replicas = StatusReplicas(pool, s);
  it->second.last_scale_time = s.last_scale_time;
  if (s.report) s.report = it->second;
}

void PoolScaler::SetReport(const std::string& key, const api::InferencePool& pool, State& s,
                           ScalingReport report) {
  report.desired_replicas = StatusReplicas(pool, s);
  report.last_scale_time = s.last_scale_time;
  if (s.report == report) return;
  s.report = report;
  {
    const std::lock_guard lock(mu_);
    if (!leading_) return;
    reports_[key] = std::move(report);
  }
  if (options_.changed) options_.changed(key);
}

kube::Result<kube::ReconcileResult> PoolScaler::Reconcile(const std::string& key) {
  const std::shared_ptr<const PoolObject> object = store_.GetPool(key);
  const api::InferencePool* pool = object ? &object->pool : nullptr;
  if (pool == nullptr || !pool->errors.empty() || !pool->spec.autoscaling.enabled ||
      !pool->spec.scale_target_ref) {
    Untrack(key, pool);
    return kube::ReconcileResult{};
  }
  const std::shared_ptr<State> state = StateFor(key, *pool);
  if (!state) return kube::ReconcileResult{};  // not leading: SetLeading(true) brings it back
  return Tick(key, *object, *state);
}

kube::Result<kube::ReconcileResult> PoolScaler::Tick(const std::string& key,
                                                     const PoolObject& object, State& s) {
  const api::InferencePool& pool = object.pool;
  const kube::ReconcileResult again{.requeue_after = options_.tick};
  const api::AutoscalingSpec& a = pool.spec.autoscaling;
  const api::ScaleTargetRef& ref = *pool.spec.scale_target_ref;
  const Clock::TimePoint now = clock_.Now();
  const auto held = [&](const char* reason) {
    if (metrics_ != nullptr) metrics_->Held(pool.ns, pool.name, reason);
  };

  // Someone else's autoscaler on the same target: leave it alone.
  if (!s.hpa_checked_at || now - *s.hpa_checked_at >= options_.hpa_check_interval) {
    auto hpas = scales_.Autoscalers(pool.ns, ref);
    if (hpas) {
      s.hpas = std::move(*hpas);
    } else {
      Log().Warn("listing HorizontalPodAutoscalers failed",
                 {{"pool", key}, {"error", hpas.error().ToString()}});
    }
    s.hpa_checked_at = now;
  }
  if (!s.hpas.empty()) {
    held(reasons::kHorizontalPodAutoscaler);
    SetReport(key, pool, s,
              MakeReport("False", reasons::kHorizontalPodAutoscaler,
                         "HorizontalPodAutoscaler " + s.hpas.front() + " scales " +
                             TargetName(ref) + "; this pool does not write its /scale"));
    return again;
  }

  // The target's replicas as they are.
  if (!s.scale || now - s.scale_read_at >= options_.scale_read_interval) {
    auto read = scales_.Read(pool.ns, ref);
    if (!read) {
      held(reasons::kScaleTargetUnavailable);
      SetReport(
          key, pool, s,
          MakeReport("False", reasons::kScaleTargetUnavailable,
                     "reading the /scale of " + TargetName(ref) + ": " + read.error().ToString()));
      return read.error();  // retried with backoff
    }
    s.scale = *read;
    s.scale_read_at = now;
  }
  if (!s.written) {
    // Never scaled by this pool: its replicas are the target, and initialReplicas applies.
    s.written = s.target = s.scale->replicas;
    if (a.initial_replicas && s.last_scale_time.empty() &&
        s.scale->replicas < *a.initial_replicas && a.mode == api::ScalingMode::kApply) {
      auto applied = Apply(key, pool, s, *a.initial_replicas,
                           "initialReplicas " + std::to_string(*a.initial_replicas));
      if (!applied || !*applied) s.written.reset();  // not written: tried again next tick
      if (!applied) return applied.error();
      if (!s.written) return again;
    }
  } else if (s.scale->replicas != *s.written && a.mode == api::ScalingMode::kApply) {
    // Someone else set the replicas: theirs stand, and this pool does not write for a while.
    const std::int32_t theirs = s.scale->replicas;
    CancelDrain(pool, s, "someone else set the replicas to " + std::to_string(theirs));
    events_.Record(PoolReference(pool), kube::EventType::kNormal, reasons::kExternalChange,
                   TargetName(ref) + " was set to " + std::to_string(theirs) +
                       " replicas by someone else (this pool last wrote " +
                       std::to_string(*s.written) + "): adopted; no writes for " +
                       Number(a.downscale_delay_seconds) + " s");
    s.written = s.target = theirs;
    s.timer = {};
    s.writes_held_until = now + std::chrono::duration_cast<Clock::TimePoint::duration>(
                                    std::chrono::duration<double>(a.downscale_delay_seconds));
    ReportScale(key, pool, s);
    if (Fenced()) {
      auto patched = scales_.PatchStatus(pool.ns, pool.name, theirs, s.last_scale_time);
      if (!patched) {
        Log().Warn("recording adopted replicas failed",
                   {{"pool", key}, {"error", patched.error().ToString()}});
      }
    }
  }
  if (a.mode == api::ScalingMode::kRecommend) {
    // Recommending: the replicas are whoever set them; the target is the recommendation.
    CancelDrain(pool, s, "the pool only recommends now");
    s.written = s.scale->replicas;
  } else if (s.drain) {
    FollowWrittenDrain(pool, s, now);  // a pending drain's target is below /scale's replicas
  } else if (s.target != *s.written) {
    // Applying again after recommending: the policy starts from the replicas as they are.
    s.target = *s.written;
    s.timer = {};
  }

  const double now_s = Seconds(now);
  const autoscale::PolicyInput input = Measure(key, object, s, now);
  const std::int32_t before = s.target;
  const autoscale::DelayTimer timer_before = s.timer;
  const autoscale::Decision d = autoscale::Decide(PolicyOf(a), input, s.timer);
  const bool held_for_change = now < s.writes_held_until;
  if (held_for_change && d.replicas != before) {
    // Not applied while someone else's replicas stand: the timer keeps running, so that the
    // decision is applied on the first tick after the hold if it still points the same way.
    s.timer =
        timer_before.running()
            ? timer_before
            : autoscale::DelayTimer{.direction = d.replicas > before ? autoscale::Direction::kUp
                                                                     : autoscale::Direction::kDown,
                                    .since_seconds = now_s};
  }
  const bool recommend = a.mode == api::ScalingMode::kRecommend;
  const bool drains = ScaleInOrderFor(ref.kind, 0) != ScaleInOrder::kNone;
  const char* const active = recommend ? reasons::kRecommending
                             : drains  ? reasons::kActive
                                       : reasons::kNoDrain;
  ScalingReport report =
      MakeReport("True", active,
                 std::string(recommend ? "deciding without writing /scale: " : "scaling ") +
                     TargetName(ref) + " between " + std::to_string(a.min_replicas) + " and " +
                     std::to_string(a.max_replicas.value_or(a.min_replicas)) + " replicas, " +
                     Number(a.target_ongoing_requests) + " ongoing requests each" +
                     (drains ? ""
                             : "; its scale-in does not drain (which pods a " + ref.kind +
                                   " removes is not known)"));
  if (d.step == autoscale::Step::kMetricsUnknown) {
    held(reasons::kMetricsUnknown);
    report = MakeReport("False", reasons::kMetricsUnknown,
                        "no fresh load figures from the ready workers: holding at " +
                            std::to_string(s.target) + " replicas");
  } else if (d.step == autoscale::Step::kMetricsPartial) {
    held(reasons::kMetricsPartial);
    report = MakeReport("True", reasons::kMetricsPartial,
                        "the load of some ready workers is unknown: not scaling down");
  } else if (held_for_change) {
    report = MakeReport("False", reasons::kExternalChange,
                        TargetName(ref) +
                            "'s replicas were changed by someone else and adopted; "
                            "no writes until the downscale delay has passed");
  }
  const std::string why = Number(input.total.value_or(0)) + " ongoing requests over " +
                          std::to_string(input.current) + " ready workers, " +
                          Number(a.target_ongoing_requests) + " each (desired " +
                          Number(d.desired) + ")";
  kube::Result<bool> applied = false;
  if (!recommend && !held_for_change && (d.replicas < *s.written || s.drain)) {
    applied = ScaleIn(key, object, s, d.replicas, why, now, report);
  } else if (d.replicas != before) {
    if (recommend) {
      s.target = d.replicas;
      events_.Record(PoolReference(pool), kube::EventType::kNormal, "ScaleRecommended",
                     "would scale " + TargetName(ref) + " from " + std::to_string(before) + " to " +
                         std::to_string(d.replicas) + ": " + why);
      if (metrics_ != nullptr)
        metrics_->Decided(pool.ns, pool.name, d.replicas > before ? "up" : "down");
      ReportScale(key, pool, s);
      if (Fenced()) (void)scales_.PatchStatus(pool.ns, pool.name, d.replicas, s.last_scale_time);
    } else if (held_for_change) {
      held(reasons::kExternalChange);
    } else {
      applied = Apply(key, pool, s, d.replicas, why);
    }
  }
  if (!applied) {
    held(reasons::kScaleFailed);
    SetReport(
        key, pool, s,
        MakeReport("False", reasons::kScaleFailed,
                   "writing the /scale of " + TargetName(ref) + ": " + applied.error().ToString()));
    return applied.error();
  }
  if (metrics_ != nullptr) {
    const double age = s.timer.AgeSeconds(now_s);
    metrics_->Observe(
        pool.ns, pool.name,
        {.desired = d.desired,
         .target = s.target,
         .current = input.current,
         .delay_up_seconds = s.timer.direction == autoscale::Direction::kUp ? age : 0,
         .delay_down_seconds = s.timer.direction == autoscale::Direction::kDown ? age : 0});
  }
  if (s.drain) report.draining = s.drain->pods;
  SetReport(key, pool, s, std::move(report));
  return again;
}

autoscale::PolicyInput PoolScaler::Measure(const std::string& key, const PoolObject& object,
                                           State& s, Clock::TimePoint now) {
  const api::InferencePool& pool = object.pool;
  const double now_seconds = Seconds(now);
  const double look_back = pool.spec.autoscaling.look_back_period_seconds;
  if (!s.window || s.window->look_back_seconds() != look_back) s.window.emplace(look_back);
  const std::shared_ptr<const PoolMembers> members = members_(key);
  std::vector<std::string> ready;
  std::unordered_map<routing::WorkerKey, const std::string*> pods;
  if (members) {
    ready.reserve(members->workers.size());
    for (const routing::Worker& w : members->workers) {
      // The workers a scale-in drains no longer count, as Ray counts only running replicas.
      if (!s.drain || !s.drain->Has(PodName(w))) ready.push_back(w.pod);
      pods.emplace(w.key, &w.pod);
    }
  }
  std::size_t waiting = 0;
  if (options_.directory != nullptr) {
    if (const auto state = options_.directory->Find(key)) {
      waiting = state->Waiting();
      for (const auto& observed : state->Loads()) {
        const auto it = pods.find(observed.worker);
        if (it == pods.end() || !observed.load.available) continue;
        s.window->Record(*it->second, now_seconds, observed.load.running + observed.load.waiting);
      }
    }
  }
  // The picks waiting on the other replicas, as their fresh reports say.
  const DemandReadings::Reading others =
      demand_.Observe(key, object.demand, own_demand_, now, clock_.WallNow());
  waiting += static_cast<std::size_t>(others.waiting);
  if (!others.expired.empty() && Fenced()) {
    auto removed = scales_.RemoveAnnotations(pool.ns, pool.name, others.expired);
    if (!removed) {
      Log().Warn("removing stale demand reports failed",
                 {{"pool", key}, {"error", removed.error().ToString()}});
    }
  }
  s.window->Retain(ready);
  // A worker whose scrapes have failed for three intervals no longer counts.
  const double fresh = 3.0 * pool.spec.metrics.interval_seconds;
  return autoscale::InputAt(*s.window, ready, static_cast<double>(waiting), now_seconds, fresh,
                            s.target);
}

kube::Result<bool> PoolScaler::Apply(const std::string& key, const api::InferencePool& pool,
                                     State& s, std::int32_t replicas, const std::string& why) {
  const api::ScaleTargetRef& ref = *pool.spec.scale_target_ref;
  if (!Fenced()) return false;
  auto written = scales_.Write(pool.ns, ref, s.scale->resource_version, replicas);
  if (!written && written.error().IsConflict()) {
    // /scale moved since it was read (a Deployment's status moves it too): write again only if
    // its replicas are still this pool's.
    auto read = scales_.Read(pool.ns, ref);
    if (!read) return read.error();
    s.scale = *read;
    s.scale_read_at = clock_.Now();
    if (read->replicas != s.written) return false;  // the next tick adopts theirs
    if (!Fenced()) return false;
    written = scales_.Write(pool.ns, ref, read->resource_version, replicas);
  }
  if (!written) return written.error();
  const std::int32_t from = s.written.value_or(s.scale->replicas);
  s.scale = *written;
  s.scale_read_at = clock_.Now();
  s.target = replicas;
  s.written = replicas;
  s.last_scale_time = FormatRfc3339(clock_.WallNow());
  ReportScale(key, pool, s);
  if (Fenced()) {
    auto patched = scales_.PatchStatus(pool.ns, pool.name, replicas, s.last_scale_time);
    if (!patched) {
      Log().Warn("recording the scale in the status failed",
                 {{"pool", key}, {"error", patched.error().ToString()}});
    }
  }
  const bool up = replicas > from;
  events_.Record(PoolReference(pool), kube::EventType::kNormal, up ? "ScaledUp" : "ScaledDown",
                 "scaled " + TargetName(ref) + " from " + std::to_string(from) + " to " +
                     std::to_string(replicas) + ": " + why);
  if (metrics_ != nullptr) metrics_->Decided(pool.ns, pool.name, up ? "up" : "down");
  Log().Info(
      "scaled",
      {{"pool", key}, {"target", TargetName(ref)}, {"from", from}, {"to", replicas}, {"why", why}});
  return true;
}

}  // namespace eoc::controller
