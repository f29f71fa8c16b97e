#include "signals/carbon_intensity.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace eoc::signals {
namespace {

std::string Seconds(std::chrono::seconds s) { return std::to_string(s.count()) + " s"; }

}  // namespace

bool IsValidCarbonIntensity(double value) {
  return std::isfinite(value) && value >= kMinCarbonIntensity && value <= kMaxCarbonIntensity;
}

ZoneIntensities::ZoneIntensities(std::chrono::seconds hold) : hold_(hold) {
  if (hold < std::chrono::seconds::zero()) {
    throw std::invalid_argument("ZoneIntensities: the hold must not be negative");
  }
}

ZoneReading* ZoneIntensities::Find(std::string_view zone) {
  const auto it = zones_.find(zone);
  if (it != zones_.end()) return &it->second;
  if (zones_.size() >= kMaxCarbonZones) return nullptr;
  return &zones_.emplace(std::string(zone), ZoneReading{}).first->second;
}

bool ZoneIntensities::Update(std::string_view zone, double value, SteadyTime at) {
  if (!IsValidCarbonIntensity(value)) {
    Fail(zone,
         "intensity " + std::to_string(value) + " gCO2e/kWh is not a number from " +
             std::to_string(static_cast<long>(kMinCarbonIntensity)) + " to " +
             std::to_string(static_cast<long>(kMaxCarbonIntensity)),
         at);
    return false;
  }
  ZoneReading* z = Find(zone);
  if (z == nullptr) return false;
  if (z->value && at < z->value_at) return true;  // late: the newer value stays
  z->value = value;
  z->value_at = at;
  z->error.reset();
  return true;
}

bool ZoneIntensities::Fail(std::string_view zone, std::string error, SteadyTime at) {
  ZoneReading* z = Find(zone);
  if (z == nullptr) return false;
  z->error = std::move(error);
  z->error_at = at;
  return true;
}

std::optional<double> ZoneIntensities::Get(std::string_view zone, SteadyTime now) const {
  const auto it = zones_.find(zone);
  if (it == zones_.end() || !it->second.value) return std::nullopt;
  if (now - it->second.value_at > hold_) return std::nullopt;
  return it->second.value;
}

std::vector<ZoneIntensityError> ZoneIntensities::Errors(SteadyTime now) const {
  std::vector<ZoneIntensityError> out;
  for (const auto& [name, z] : zones_) {
    if (Get(name, now)) continue;
    ZoneIntensityError e{.zone = name, .error = {}, .failed_at = z.error_at};
    if (z.error) {
      e.error = *z.error;
      if (z.value)
        e.error += " (the last good value is older than the hold of " + Seconds(hold_) + ")";
    } else {
      e.error = "no value read within the hold of " + Seconds(hold_);
      e.failed_at = z.value_at;
    }
    out.push_back(std::move(e));
  }
  return out;
}

bool ZoneIntensities::Take(std::string_view zone, const ZoneReading& reading) {
  if (Find(zone) == nullptr) return false;
  if (reading.value) Update(zone, *reading.value, reading.value_at);
  if (reading.error && (!reading.value || reading.error_at >= reading.value_at)) {
    Fail(zone, *reading.error, reading.error_at);
  }
  return true;
}

const ZoneReading* ZoneIntensities::Reading(std::string_view zone) const {
  const auto it = zones_.find(zone);
  return it == zones_.end() ? nullptr : &it->second;
}

void ZoneIntensities::RetainOnly(std::span<const std::string> zones) {
  std::erase_if(zones_, [&](const auto& entry) {
    return std::find(zones.begin(), zones.end(), entry.first) == zones.end();
  });
}

std::string PollKey(std::string_view url, std::span<const std::string> zones) {
  std::vector<std::string> sorted(zones.begin(), zones.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string key(url);
  for (const auto& z : sorted) {
    key += '\n';  // neither a URL nor a zone (a label value) holds a newline
    key += z;
  }
  return key;
}

PollSchedule::PollSchedule(std::chrono::seconds min_interval) : min_interval_(min_interval) {
  if (min_interval < std::chrono::seconds::zero()) {
    throw std::invalid_argument("PollSchedule: the interval must not be negative");
  }
}

bool PollSchedule::Due(std::string_view key, SteadyTime now) const {
  const auto it = last_.find(key);
  return it == last_.end() || now - it->second >= min_interval_;
}

void PollSchedule::Attempted(std::string_view key, SteadyTime at) {
  const auto it = last_.find(key);
  if (it != last_.end()) {
    it->second = std::max(it->second, at);
    return;
  }
  if (last_.size() >= kMaxCarbonZones) {
    last_.erase(std::min_element(last_.begin(), last_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; }));
  }
  last_.emplace(std::string(key), at);
}

std::optional<SteadyTime> PollSchedule::NextDue(std::string_view key) const {
  const auto it = last_.find(key);
  if (it == last_.end()) return std::nullopt;
  return it->second + min_interval_;
}

}  // namespace eoc::signals
