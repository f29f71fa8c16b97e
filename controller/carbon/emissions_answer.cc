#include "controller/carbon/emissions_answer.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "api/spec_rules.h"
#include "common/bounded_json.h"
#include "common/rfc3339.h"
#include "common/text.h"
#include "signals/carbon_intensity.h"

namespace eoc::controller::carbon {
namespace {

static_assert(signals::kMinCarbonIntensity == api::internal::rules::kCarbonIntensity.min &&
                  signals::kMaxCarbonIntensity == api::internal::rules::kCarbonIntensity.max,
              "the SDK's ratings are held to the spec's bound on static intensities");

struct Newest {
  double rating = 0;
  std::chrono::system_clock::time_point time;
};

EmissionsAnswer Refused(std::string error) {
  EmissionsAnswer a;
  a.error = std::move(error);
  return a;
}

std::string Number(double v) { return nlohmann::json(v).dump(); }

std::string TypeName(const nlohmann::json& v) { return v.type_name(); }

}  // namespace

EmissionsAnswer ParseEmissionsByLocations(std::string_view body,
                                          std::span<const std::string> zones) {
  std::string error;
  const std::optional<nlohmann::json> parsed = ParseBoundedJson(
      body, {.max_depth = kMaxEmissionsAnswerDepth, .max_bytes = kMaxEmissionsAnswerBytes}, error);
  if (!parsed) return Refused("the answer: " + error);
  const nlohmann::json& doc = *parsed;
  if (!doc.is_array()) {
    return Refused("expected a JSON array of {location, time, rating}, got " + TypeName(doc));
  }
  if (doc.size() > kMaxEmissionsEntries) {
    return Refused("the answer has " + std::to_string(doc.size()) + " entries, over the limit of " +
                   std::to_string(kMaxEmissionsEntries));
  }
  std::map<std::string, Newest, std::less<>> newest;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const nlohmann::json& entry = doc[i];
    const std::string where = "[" + std::to_string(i) + "]";
    if (!entry.is_object()) return Refused(where + ": expected an object, got " + TypeName(entry));
    const auto location = entry.find("location");
    if (location == entry.end()) return Refused(where + ".location: missing");
    if (!location->is_string()) {
      return Refused(where + ".location: expected a string, got " + TypeName(*location));
    }
    const auto& name = location->get_ref<const std::string&>();
    if (name.empty()) return Refused(where + ".location: empty");
    const auto time = entry.find("time");
    if (time == entry.end()) return Refused(where + ".time: missing");
    if (!time->is_string()) {
      return Refused(where + ".time: expected a string, got " + TypeName(*time));
    }
    const auto at = ParseRfc3339(time->get_ref<const std::string&>());
    if (!at) {
      return Refused(where + ".time: " + Quoted(time->get_ref<const std::string&>()) +
                     " is not an RFC 3339 time");
    }
    const auto rating = entry.find("rating");
    if (rating == entry.end()) return Refused(where + ".rating: missing");
    if (!rating->is_number()) {
      return Refused(where + ".rating: expected a number, got " + DescribeJson(*rating));
    }
    const double value = rating->get<double>();
    if (!signals::IsValidCarbonIntensity(value)) {
      return Refused(where + ".rating: " + Number(value) +
                     " is out of range [0, 100000] gCO2e/kWh");
    }
    const auto it = newest.find(name);
    if (it == newest.end()) {
      newest.emplace(name, Newest{value, *at});
    } else if (*at > it->second.time) {
      it->second = Newest{value, *at};
    }
  }
  EmissionsAnswer answer;
  for (const std::string& zone : zones) {
    const auto it = newest.find(zone);
    if (it == newest.end()) {
      answer.missing.emplace(zone, "no entry for location " + Quoted(zone));
    } else {
      answer.ratings.emplace(zone, it->second.rating);
    }
  }
  return answer;
}

}  // namespace eoc::controller::carbon
