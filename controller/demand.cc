#include "controller/demand.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>

#include "api/spec_rules.h"
#include "common/json_members.h"
#include "common/rfc3339.h"
#include "controller/pool_reconciler.h"
#include "telemetry/logging.h"

namespace eoc::controller {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxNameBytes = 63;  // an annotation key's name part

static_assert(kMaxDemandCount == api::internal::rules::kMaxQueue.max,
              "a demand report's bound is the largest maxQueue the CRD accepts");

const telemetry::Logger& Log() {
  static const telemetry::Logger log("demand");
  return log;
}

std::string Hex32(std::string_view text) {
  std::uint32_t h = 2166136261U;  // FNV-1a
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619U;
  }
  std::array<char, 9> buf{};
  std::snprintf(buf.data(), buf.size(), "%08x", h);
  return buf.data();
}

// When a report first seen was written, on this replica's steady clock: its time if that is
// within kDemandFresh of `wall_now`, else long enough ago not to be fresh.
Clock::TimePoint FirstSeen(std::string_view value, Clock::TimePoint now,
                           std::chrono::system_clock::time_point wall_now) {
  const Clock::TimePoint stale = now - kDemandFresh - std::chrono::seconds(1);
  const auto space = value.find(' ');
  if (space == std::string_view::npos) return stale;
  const auto written = ParseRfc3339(value.substr(space + 1));
  if (!written) return stale;
  const auto age = wall_now - *written;
  if (age > kDemandFresh || age < -kDemandFresh) return stale;
  return now -
         std::chrono::duration_cast<Clock::TimePoint::duration>(std::max(age, decltype(age){0}));
}

}  // namespace

std::string DemandAnnotationKey(std::string_view replica) {
  std::string name = "demand-";
  for (const char c : replica) {
    const auto u = static_cast<unsigned char>(c);
    name += std::isalnum(u) != 0 ? static_cast<char>(std::tolower(u)) : (c == '.' ? '.' : '-');
  }
  while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
  if (name.size() > kMaxNameBytes) {
    name = name.substr(0, kMaxNameBytes - 9) + "-" + Hex32(replica);
  }
  return "eoc.dev/" + name;
}

std::optional<std::int64_t> ParseDemandCount(std::string_view value) {
  const auto space = value.find(' ');
  const std::string_view digits = value.substr(0, space);
  std::int64_t count = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || count < 0 ||
      count > kMaxDemandCount) {
    return std::nullopt;
  }
  return count;
}

std::string FormatDemand(std::int64_t count, const std::string& rfc3339) {
  return std::to_string(count) + " " + rfc3339;
}

std::map<std::string, std::string> DemandAnnotations(const json& pool) {
  std::map<std::string, std::string> out;
  const json* annotations = MemberOrNull(MemberOrNull(pool, "metadata"), "annotations");
  if (annotations == nullptr || !annotations->is_object()) return out;
  for (const auto& [key, value] : annotations->items()) {
    if (key.rfind(kDemandAnnotationPrefix, 0) == 0 && value.is_string()) {
      out.emplace(key, value.get<std::string>());
    }
  }
  return out;
}

DemandReporter::DemandReporter(kube::Client& client, routing::PoolDirectory& directory,
                               const std::string& replica, const Clock& clock,
                               DemandReporterOptions options)
    : client_(client),
      directory_(directory),
      annotation_(DemandAnnotationKey(replica)),
      clock_(clock),
      options_(options),
      wake_(clock) {}

DemandReporter::~DemandReporter() { Stop(); }

void DemandReporter::Start() {
  thread_ = std::thread([this] {
    while (!wake_.SleepFor(options_.period, [this] { return stopping_.load(); })) RunOnce();
  });
}

void DemandReporter::Stop() {
  if (stopping_.exchange(true)) return;
  wake_.Notify();
  if (thread_.joinable()) thread_.join();
  for (const auto& [key, written] : written_) (void)Write(key, nullptr);
  written_.clear();
}

bool DemandReporter::Write(const std::string& key, const json& value) {
  const auto [ns, name] = SplitPoolKey(key);
  auto patched = client_.Patch(kInferencePools, ns, name, kube::PatchType::kMerge,
                               {{"metadata", {{"annotations", {{annotation_, value}}}}}});
  if (!patched && !patched.error().IsNotFound()) {
    Log().Warn("reporting waiting picks failed",
               {{"pool", key}, {"error", patched.error().ToString()}});
  }
  return patched.ok();
}

void DemandReporter::RunOnce() {
  const Clock::TimePoint now = clock_.Now();
  for (const std::string& key : directory_.Keys()) {
    const auto state = directory_.Find(key);
    if (!state) continue;
    const auto count = static_cast<std::int64_t>(state->Waiting());
    const auto it = written_.find(key);
    const bool known = it != written_.end();
    if (!known && count == 0) continue;
    const auto since = known ? now - it->second.at : Clock::TimePoint::duration::max();
    const bool changed = !known || it->second.count != count;
    const bool due = changed ? since >= options_.min_gap : count > 0 && since >= options_.heartbeat;
    if (!due) continue;
    if (Write(key, FormatDemand(count, FormatRfc3339Micro(clock_.WallNow())))) {
      written_[key] = {.count = count, .at = now};
    }
  }
}

DemandReadings::Reading DemandReadings::Observe(
    const std::string& pool_key, const std::map<std::string, std::string>& annotations,
    const std::string& own, Clock::TimePoint now, std::chrono::system_clock::time_point wall_now) {
  Reading out;
  const std::lock_guard lock(mu_);
  auto& seen = pools_[pool_key];
  std::erase_if(seen, [&](const auto& entry) { return !annotations.contains(entry.first); });
  for (const auto& [key, value] : annotations) {
    // A report first seen counts as changed when its own time says it was written lately (one
    // left by a replica that died must not count for a new leader); after that, what counts is
    // when this replica saw it change, whatever the writer's clock.
    auto [it, added] =
        seen.try_emplace(key, Seen{.value = value, .changed = FirstSeen(value, now, wall_now)});
    if (!added && it->second.value != value) it->second = {.value = value, .changed = now};
    if (now - it->second.changed >= kDemandForgotten) out.expired.push_back(key);
    if (key == own || now - it->second.changed > kDemandFresh) continue;
    // Each count is at most kMaxDemandCount, so no number of reports a pool can carry overflows
    // the sum.
    out.waiting += ParseDemandCount(value).value_or(0);
  }
  return out;
}

void DemandReadings::Forget(const std::string& pool_key) {
  const std::lock_guard lock(mu_);
  pools_.erase(pool_key);
}

}  // namespace eoc::controller
