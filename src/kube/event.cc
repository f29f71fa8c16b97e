#include "kube/event.h"

#include <array>
#include <cstdio>

#include "common/rfc3339.h"

namespace eoc::kube {
namespace {

using nlohmann::json;

// What an Event name may hold (a DNS subdomain), and what the ".<16 hex>" suffix takes of it.
constexpr std::size_t kMaxNameBytes = 253;
constexpr std::size_t kNameSuffixBytes = 17;

json ReferenceJson(const ObjectReference& o) {
  json ref = json::object();
  const auto set = [&ref](const char* key, const std::string& value) {
    if (!value.empty()) ref[key] = value;
  };
  set("kind", o.kind);
  set("namespace", o.ns);
  set("name", o.name);
  set("uid", o.uid);
  set("apiVersion", o.api_version);
  set("resourceVersion", o.resource_version);
  return ref;
}

}  // namespace

const char* ToString(EventType type) { return type == EventType::kWarning ? "Warning" : "Normal"; }

json Event::ToJson() const {
  json metadata = {{"name", name}, {"namespace", ns}};
  if (!resource_version.empty()) metadata["resourceVersion"] = resource_version;
  json source = {{"component", component}};
  if (!host.empty()) source["host"] = host;
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", std::move(metadata)},
                {"involvedObject", ReferenceJson(involved)},
                {"type", ToString(type)},
                {"reason", reason},
                {"message", message},
                {"source", std::move(source)},
                {"count", count},
                {"firstTimestamp", FormatRfc3339(first_timestamp)},
                {"lastTimestamp", FormatRfc3339(last_timestamp)},
                {"reportingComponent", component}};
  if (!host.empty()) event["reportingInstance"] = host;
  return event;
}

std::string EventName(const std::string& object_name, std::int64_t unix_nanos) {
  std::array<char, kNameSuffixBytes + 1> suffix{};
  std::snprintf(suffix.data(), suffix.size(), ".%016llx",
                static_cast<unsigned long long>(unix_nanos));
  return object_name.substr(0, kMaxNameBytes - kNameSuffixBytes) + suffix.data();
}

}  // namespace eoc::kube
