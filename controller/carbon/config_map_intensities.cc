#include "controller/carbon/config_map_intensities.h"

#include <charconv>
#include <string>

#include "common/object_meta.h"
#include "common/text.h"
#include "kube/types.h"

namespace eoc::controller::carbon {
namespace {

// The value's intensity, or (in *why) why it is not one.
std::optional<double> ParseIntensity(std::string_view text, std::string* why) {
  if (text.size() > kMaxIntensityValueLength) {
    *why = "the value is longer than " + std::to_string(kMaxIntensityValueLength) + " characters";
    return std::nullopt;
  }
  const std::string_view number = TrimWhitespace(text);
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) {
    *why = "\"" + std::string(text) + "\" is not a number (gCO2e/kWh)";
    return std::nullopt;
  }
  if (!signals::IsValidCarbonIntensity(value)) {
    *why = std::string(number) + " gCO2e/kWh is out of range [" +
           std::to_string(static_cast<long>(signals::kMinCarbonIntensity)) + ", " +
           std::to_string(static_cast<long>(signals::kMaxCarbonIntensity)) + "]";
    return std::nullopt;
  }
  return value;
}

}  // namespace

IntensityConfigMap ToIntensityConfigMap(const nlohmann::json& object) {
  ObjectMeta meta = ParseObjectMeta(object);
  IntensityConfigMap out{.ns = std::move(meta.ns), .name = std::move(meta.name)};
  const auto data = object.find("data");
  if (data == object.end() || data->is_null()) return out;
  if (!data->is_object()) throw kube::MappingError("data: expected an object");
  for (const auto& [zone, value] : data->items()) {
    if (!value.is_string()) {
      throw kube::MappingError(
          std::string("data[\"").append(zone).append("\"]: expected a string"));
    }
    if (out.values.size() + out.invalid.size() >= signals::kMaxCarbonZones) {
      ++out.ignored;
      continue;
    }
    std::string why;
    if (const auto v = ParseIntensity(value.get_ref<const std::string&>(), &why)) {
      out.values.emplace(zone, *v);
    } else {
      out.invalid.emplace(zone, std::move(why));
    }
  }
  return out;
}

void ReadIntensityConfigMap(const IntensityConfigMap* config_map, std::string_view key,
                            std::span<const std::string> zones, signals::SteadyTime now,
                            signals::ZoneIntensities& into) {
  const std::string source = "ConfigMap " + std::string(key) + ": ";
  for (const std::string& zone : zones) {
    if (config_map == nullptr) {
      into.Fail(zone, source + "not found", now);
      continue;
    }
    if (const auto v = config_map->values.find(zone); v != config_map->values.end()) {
      into.Update(zone, v->second, now);
      continue;
    }
    const auto bad = config_map->invalid.find(zone);
    std::string why = source;
    why.append(bad != config_map->invalid.end() ? "key \"" : "no key \"").append(zone).append("\"");
    if (bad != config_map->invalid.end()) {
      why.append(": ").append(bad->second);
    } else if (config_map->ignored > 0) {
      why.append(" among the first ")
          .append(std::to_string(signals::kMaxCarbonZones))
          .append(" (")
          .append(std::to_string(config_map->ignored))
          .append(" more were not read)");
    }
    into.Fail(zone, std::move(why), now);
  }
}

}  // namespace eoc::controller::carbon
