#include "kube/pod_view.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "common/json_members.h"
#include "common/rfc3339.h"
#include "kube/types.h"

namespace eoc::kube {
namespace {

using nlohmann::json;

StringPairs Sorted(const std::map<std::string, std::string>& map, std::string_view keep_prefix,
                   std::string_view keep_key = {}) {
  StringPairs out;
  for (const auto& [k, v] : map) {
    if (k.starts_with(keep_prefix) || (!keep_key.empty() && k == keep_key)) out.emplace_back(k, v);
  }
  out.shrink_to_fit();
  return out;
}

bool IsExtended(std::string_view resource) {
  return resource != "cpu" && resource != "memory" && resource != "ephemeral-storage" &&
         !resource.starts_with("hugepages-");
}

// Extended resources are whole numbers ("1", "8"); anything else counts as one unit.
std::int64_t Units(const json& quantity) {
  if (quantity.is_number_integer()) return quantity.get<std::int64_t>();
  if (!quantity.is_string()) return 1;
  const auto& s = quantity.get_ref<const std::string&>();
  std::int64_t n = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  return ec == std::errc() && ptr == s.data() + s.size() ? n : 1;
}

std::vector<std::pair<std::string, std::int64_t>> ExtendedRequests(const json& spec) {
  std::map<std::string, std::int64_t> sum;
  const json* containers = MemberOrNull(spec, "containers");
  if (containers == nullptr || !containers->is_array()) return {};
  for (const auto& c : *containers) {
    const json* resources = MemberOrNull(c, "resources");
    const json* requests = resources == nullptr ? nullptr : MemberOrNull(*resources, "requests");
    const json* limits = resources == nullptr ? nullptr : MemberOrNull(*resources, "limits");
    // Extended resources may be given as limits only; requests then default to them.
    const json* source = requests != nullptr ? requests : limits;
    if (source == nullptr || !source->is_object()) continue;
    for (const auto& [name, quantity] : source->items()) {
      if (IsExtended(name)) sum[name] += Units(quantity);
    }
  }
  return {sum.begin(), sum.end()};
}

PodPhase PhaseOf(const std::string& phase) {
  if (phase == "Pending") return PodPhase::kPending;
  if (phase == "Running") return PodPhase::kRunning;
  if (phase == "Succeeded") return PodPhase::kSucceeded;
  if (phase == "Failed") return PodPhase::kFailed;
  return PodPhase::kUnknown;
}

// An optional time field: absent is nullopt; present, it must be an RFC 3339 time.
std::optional<std::chrono::system_clock::time_point> TimeOf(const json& object, const char* field,
                                                            const char* path) {
  const json* value = MemberOrNull(object, field);
  if (value == nullptr || value->is_null()) return std::nullopt;
  auto time =
      value->is_string() ? ParseRfc3339(value->get_ref<const std::string&>()) : std::nullopt;
  if (!time) throw MappingError(std::string(path) + ": not an RFC 3339 time");
  return time;
}

// Sets view.ready and view.ready_since from the Ready condition.
void ReadReady(const json& status, PodView& view) {
  const json* conditions = MemberOrNull(status, "conditions");
  if (conditions == nullptr || !conditions->is_array()) return;
  for (const json& c : *conditions) {
    if (StringOrEmpty(c, "type") != "Ready") continue;
    view.ready = StringOrEmpty(c, "status") == "True";
    view.ready_since =
        TimeOf(c, "lastTransitionTime", "status.conditions[Ready].lastTransitionTime");
    return;
  }
}

std::int32_t MostRestarts(const json& status) {
  const json* containers = MemberOrNull(status, "containerStatuses");
  if (containers == nullptr || !containers->is_array()) return 0;
  std::int32_t most = 0;
  for (const json& c : *containers) {
    const json* count = MemberOrNull(c, "restartCount");
    if (count != nullptr && count->is_number_integer()) {
      most = std::max(most, count->get<std::int32_t>());
    }
  }
  return most;
}

}  // namespace

const std::string* Lookup(const StringPairs& pairs, std::string_view key) {
  const auto it = std::lower_bound(pairs.begin(), pairs.end(), key,
                                   [](const auto& p, std::string_view k) { return p.first < k; });
  return it != pairs.end() && it->first == key ? &it->second : nullptr;
}

PodView ToPodView(const json& pod) {
  ObjectMeta meta = ParseObjectMeta(pod);
  PodView view;
  view.ns = std::move(meta.ns);
  view.name = std::move(meta.name);
  view.uid = std::move(meta.uid);
  view.labels = Sorted(meta.labels, "");
  view.annotations = Sorted(meta.annotations, kKeptAnnotationPrefix, kDeletionCostAnnotation);
  if (meta.deletion_timestamp) {
    view.deletion_timestamp = ParseRfc3339(*meta.deletion_timestamp);
    if (!view.deletion_timestamp) {
      throw MappingError("metadata.deletionTimestamp: not an RFC 3339 time");
    }
  }
  if (const json* metadata = MemberOrNull(pod, "metadata"); metadata != nullptr) {
    view.created = TimeOf(*metadata, "creationTimestamp", "metadata.creationTimestamp");
  }
  if (const json* spec = MemberOrNull(pod, "spec"); spec != nullptr) {
    view.node_name = StringOrEmpty(*spec, "nodeName");
    view.extended_requests = ExtendedRequests(*spec);
  }
  if (const json* status = MemberOrNull(pod, "status"); status != nullptr) {
    view.pod_ip = StringOrEmpty(*status, "podIP");
    view.phase = PhaseOf(StringOrEmpty(*status, "phase"));
    ReadReady(*status, view);
    view.restarts = MostRestarts(*status);
  }
  return view;
}

}  // namespace eoc::kube
