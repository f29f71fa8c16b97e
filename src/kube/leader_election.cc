#include "kube/leader_election.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <utility>

#include "common/rfc3339.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using std::chrono::nanoseconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;

std::string RandomHex16() {
  std::random_device device;
  const std::uint64_t value = (std::uint64_t{device()} << 32U) | device();
  std::array<char, 17> text{};
  std::snprintf(text.data(), text.size(), "%016llx", static_cast<unsigned long long>(value));
  return text.data();
}

std::string Hostname() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "unknown";
  return name.data();
}

std::string StringField(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t IntField(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

void Require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("leader election: " + message);
}

void Validate(const LeaderElectionConfig& c) {
  Require(!c.lease_namespace.empty(), "lease_namespace is empty");
  Require(!c.lease_name.empty(), "lease_name is empty");
  Require(c.retry_period.count() > 0, "retry_period must be greater than zero");
  Require(c.jitter_factor >= 0, "jitter_factor must not be negative");
  // As client-go: the holder must get several tries within its deadline, and must give up before
  // followers may take over.
  Require(static_cast<double>(c.renew_deadline.count()) >
              c.jitter_factor * static_cast<double>(c.retry_period.count()),
          "renew_deadline must be greater than retry_period * jitter_factor");
  Require(c.lease_duration > c.renew_deadline,
          "lease_duration must be greater than renew_deadline");
  Require(c.lease_duration >= std::chrono::seconds(1),
          "lease_duration must be at least 1 s (the Lease counts whole seconds)");
}

}  // namespace

std::string DefaultLeaderIdentity() { return Hostname() + "_" + RandomHex16(); }

LeaseRecord ParseLeaseRecord(const json& lease) {
  LeaseRecord record;
  const auto spec = lease.find("spec");
  if (spec == lease.end() || !spec->is_object()) return record;
  record.holder_identity = StringField(*spec, "holderIdentity");
  record.lease_duration_seconds = IntField(*spec, "leaseDurationSeconds");
  record.acquire_time = StringField(*spec, "acquireTime");
  record.renew_time = StringField(*spec, "renewTime");
  record.lease_transitions = IntField(*spec, "leaseTransitions");
  return record;
}

LeaderElector::LeaderElector(Client& client, LeaderElectionConfig config, LeaderCallbacks callbacks,
                             LeaderElectorDeps deps)
    : client_(client),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      clock_(deps.clock != nullptr ? *deps.clock : RealClock()),
      random_(deps.random ? std::move(deps.random) : SeededRandom(std::random_device{}())),
      metrics_(deps.metrics),
      wake_(clock_) {
  Validate(config_);
  if (config_.identity.empty()) config_.identity = DefaultLeaderIdentity();
}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  const std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_)
    throw std::logic_error("LeaderElector::Start: already started or stopped");
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  {
    const std::lock_guard lock(mu_);  // after a Start() under way, so that it sees the stop
    stopping_ = true;
  }
  wake_.Notify();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool LeaderElector::IsLeader() const {
  const std::lock_guard lock(mu_);
  return leading_ && clock_.Now() - renewed_at_ < config_.renew_deadline;
}

std::string LeaderElector::Leader() const {
  const std::lock_guard lock(mu_);
  return leader_;
}

void LeaderElector::Run() {
  // Unlike client-go's Run, losing the Lease leads back to candidacy rather than out of Run.
  while (Acquire()) {
    KeepRenewing();
    SetLeading(false);
  }
  if (config_.release_on_cancel) Release();
}

bool LeaderElector::Acquire() {
  while (!Stopping()) {
    const auto started = clock_.Now();
    const Attempt attempt = TryAcquireOrRenew();
    ReportLeader();
    // Acquired just as Stop() came: Run() releases it without a blip of leadership.
    if (attempt == Attempt::kLeading) {
      if (Stopping()) return false;
      {
        const std::lock_guard lock(mu_);
        renewed_at_ = started;
      }
      SetLeading(true);
      return true;
    }
    // client-go's wait.Jitter: retry_period * (1 + jitter_factor * random).
    SleepFor(Jittered(config_.retry_period, config_.jitter_factor, random_()));
  }
  return false;
}

void LeaderElector::KeepRenewing() {
  for (;;) {
    steady_clock::time_point deadline;
    {
      const std::lock_guard lock(mu_);
      deadline = renewed_at_ + config_.renew_deadline;
    }
    // Wake no later than the deadline, so on_stopped_leading is not late by a retry period.
    SleepFor(std::min<nanoseconds>(config_.retry_period, deadline - clock_.Now()));
    if (Stopping() || clock_.Now() >= deadline) return;
    const auto started = clock_.Now();
    const Attempt attempt = TryAcquireOrRenew();
    ReportLeader();
    // Another holder is definitive: leader-only work must stop now, not at the deadline.
    if (attempt == Attempt::kHeldByOther) return;
    // A renewal that succeeds after the deadline is too late: IsLeader() already said false.
    if (attempt == Attempt::kLeading && clock_.Now() < deadline) {
      const std::lock_guard lock(mu_);
      renewed_at_ = started;
    }
  }
}

void LeaderElector::SetLeading(bool leading) {
  {
    const std::lock_guard lock(mu_);
    if (leading_ == leading) return;
    leading_ = leading;
  }
  if (metrics_ != nullptr) metrics_->OnLeadershipChanged(leading);
  const auto& callback = leading ? callbacks_.on_started_leading : callbacks_.on_stopped_leading;
  if (callback) callback();
}

LeaderElector::Attempt LeaderElector::TryAcquireOrRenew() {
  const auto wall = clock_.WallNow();
  if (auto renewed = TryRenewOptimistically(wall)) return *renewed;

  auto got = client_.Get(resources::kLeases, config_.lease_namespace, config_.lease_name);
  if (!got) {
    if (got.error().IsNotFound()) return CreateLease(wall);
    Failed(got.error());
    return Attempt::kFailed;
  }
  Observe(std::move(*got));
  const LeaseRecord current = observed_;
  const bool ours = current.holder_identity == config_.identity;
  if (!current.holder_identity.empty() && !ours && ObservedLeaseValid()) {
    return Attempt::kHeldByOther;
  }
  LeaseRecord next = current;
  next.holder_identity = config_.identity;
  next.lease_duration_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count();
  next.renew_time = FormatRfc3339Micro(wall);
  if (!ours) {
    next.acquire_time = next.renew_time;
    ++next.lease_transitions;
  }
  return Write(next);
}

// client-go's fast path: a holder whose Lease is still valid writes its renewal straight away
// with the resourceVersion it last saw, and reads the Lease only when that fails.
std::optional<LeaderElector::Attempt> LeaderElector::TryRenewOptimistically(
    system_clock::time_point wall) {
  {
    const std::lock_guard lock(mu_);
    if (!leading_) return std::nullopt;
  }
  if (lease_.is_null() || observed_.holder_identity != config_.identity || !ObservedLeaseValid()) {
    return std::nullopt;
  }
  LeaseRecord next = observed_;
  next.lease_duration_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count();
  next.renew_time = FormatRfc3339Micro(wall);
  auto written = client_.Update(resources::kLeases, config_.lease_namespace, LeaseObject(next));
  if (!written) return std::nullopt;  // stale or failed: the slow path reads and decides
  Observe(std::move(*written));
  return Attempt::kLeading;
}

LeaderElector::Attempt LeaderElector::CreateLease(system_clock::time_point wall) {
  LeaseRecord record;
  record.holder_identity = config_.identity;
  record.lease_duration_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count();
  record.acquire_time = FormatRfc3339Micro(wall);
  record.renew_time = record.acquire_time;
  lease_ =
      json{{"apiVersion", "coordination.k8s.io/v1"},
           {"kind", "Lease"},
           {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}}};
  auto created = client_.Create(resources::kLeases, config_.lease_namespace, LeaseObject(record));
  if (!created) {
    lease_ = nullptr;
    // AlreadyExists: another candidate created it first; the next round reads theirs.
    if (!created.error().IsAlreadyExists()) Failed(created.error());
    return Attempt::kFailed;
  }
  Observe(std::move(*created));
  return Attempt::kLeading;
}

LeaderElector::Attempt LeaderElector::Write(const LeaseRecord& record) {
  auto written = client_.Update(resources::kLeases, config_.lease_namespace, LeaseObject(record));
  if (!written) {
    // Conflict: someone else wrote the Lease since we read it, and won.
    if (!written.error().IsConflict()) Failed(written.error());
    return Attempt::kFailed;
  }
  Observe(std::move(*written));
  return Attempt::kLeading;
}

void LeaderElector::Release() {
  if (lease_.is_null() || observed_.holder_identity != config_.identity) return;
  const std::string now = FormatRfc3339Micro(clock_.WallNow());
  LeaseRecord released;
  released.lease_duration_seconds = 1;
  released.acquire_time = now;
  released.renew_time = now;
  released.lease_transitions = observed_.lease_transitions;
  // Conditional on the resourceVersion we hold: a Lease someone has taken since is left alone.
  auto written = client_.Update(resources::kLeases, config_.lease_namespace, LeaseObject(released));
  if (!written) {
    if (!written.error().IsConflict()) Failed(written.error());
    return;
  }
  Observe(std::move(*written));
  ReportLeader();
}

json LeaderElector::LeaseObject(const LeaseRecord& record) const {
  json lease = lease_;
  json& spec = lease["spec"];
  spec["holderIdentity"] = record.holder_identity;
  spec["leaseDurationSeconds"] = record.lease_duration_seconds;
  spec["leaseTransitions"] = record.lease_transitions;
  if (!record.acquire_time.empty()) spec["acquireTime"] = record.acquire_time;
  if (!record.renew_time.empty()) spec["renewTime"] = record.renew_time;
  return lease;
}

// The follower's clock starts when it sees the record change, not at renewTime: timestamps
// written by other hosts are only compared for change, never against our clock.
void LeaderElector::Observe(json lease) {
  const LeaseRecord record = ParseLeaseRecord(lease);
  lease_ = std::move(lease);
  if (observed_any_ && record == observed_) return;
  observed_any_ = true;
  observed_ = record;
  observed_time_ = clock_.Now();
}

bool LeaderElector::ObservedLeaseValid() const {
  // The record's own duration (1 s after a release), as newer client-go reads it.
  const std::chrono::nanoseconds duration =
      observed_.lease_duration_seconds > 0 ? std::chrono::seconds(observed_.lease_duration_seconds)
                                           : config_.lease_duration;
  return clock_.Now() < observed_time_ + duration;
}

void LeaderElector::ReportLeader() {
  const std::string& holder = observed_.holder_identity;
  {
    const std::lock_guard lock(mu_);
    leader_ = holder;
  }
  if (holder.empty() || holder == reported_leader_) return;
  reported_leader_ = holder;
  if (callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
}

bool LeaderElector::Stopping() const { return stopping_.load(); }

void LeaderElector::SleepFor(nanoseconds d) {
  wake_.SleepFor(d, [this] { return stopping_.load(); });
}

void LeaderElector::Failed(const Status& error) const {
  if (metrics_ != nullptr) metrics_->OnLeaseError(error);
}

}  // namespace eoc::kube
