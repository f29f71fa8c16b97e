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

StringPairs Sorted(const std::map<std::string, std::string>& map, std::string_view keep_prefix) {
  StringPairs out;
  for (const auto& [k, v] : map) {
    if (k.starts_with(keep_prefix)) out.emplace_back(k, v);
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

bool IsReady(const json& status) {
  const json* conditions = MemberOrNull(status, "conditions");
  if (conditions == nullptr || !conditions->is_array()) return false;
  return std::any_of(conditions->begin(), conditions->end(), [](const json& c) {
    return StringOrEmpty(c, "type") == "Ready" && StringOrEmpty(c, "status") == "True";
  });
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
  view.annotations = Sorted(meta.annotations, kKeptAnnotationPrefix);
  if (meta.deletion_timestamp) {
    view.deletion_timestamp = ParseRfc3339(*meta.deletion_timestamp);
    if (!view.deletion_timestamp) {
      throw MappingError("metadata.deletionTimestamp: not an RFC 3339 time");
    }
  }
  if (const json* spec = MemberOrNull(pod, "spec"); spec != nullptr) {
    view.node_name = StringOrEmpty(*spec, "nodeName");
    view.extended_requests = ExtendedRequests(*spec);
  }
  if (const json* status = MemberOrNull(pod, "status"); status != nullptr) {
    view.pod_ip = StringOrEmpty(*status, "podIP");
    view.phase = PhaseOf(StringOrEmpty(*status, "phase"));
    view.ready = IsReady(*status);
  }
  return view;
}

}  // namespace eoc::kube
