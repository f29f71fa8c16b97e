// Grid carbon intensity per zone (gCO2e/kWh), the pure part: which values are believable, how long
// a source's last good value is kept once it starts failing, and how often a source may be asked.
// No I/O and no clock: every time is passed in (steady-clock times, as eoc::Clock::Now gives them).
// The Carbon Aware SDK's answer is read in controller/carbon/ (it is JSON); this is what it feeds.
//
//   eoc::signals::ZoneIntensities zones;                  // hold: kDefaultCarbonHold
//   zones.Update("eastus", 70, now);                      // a good reading
//   zones.Fail("westus", "GET ...: deadline of 2000 ms exceeded", now);
//   zones.Get("eastus", now + 30min);                     // 70: kept while the source fails
//   zones.Get("eastus", now + 2h);                        // nullopt: past the hold, unknown
//   for (const auto& e : zones.Errors(now + 2h)) ...      // {"eastus", "...", ...}: for a
//   condition
//
//   eoc::signals::PollSchedule polls;                     // kMinCarbonPollInterval per key
//   const auto key = eoc::signals::PollKey(url, zones);   // the URL and the sorted zone set
//   if (polls.Due(key, now)) { polls.Attempted(key, now); Fetch(...); }
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace eoc::signals {

using SteadyTime = std::chrono::steady_clock::time_point;

// The believable range of a zone's intensity, gCO2e/kWh: the same bound as the spec's `static`
// values (api's rules::kCarbonIntensity; src/signals may not include src/api, so
// controller/carbon/ static_asserts that the two agree). The dirtiest grids are near 1,000.
inline constexpr double kMinCarbonIntensity = 0;
inline constexpr double kMaxCarbonIntensity = 100000;

// A finite number within [kMinCarbonIntensity, kMaxCarbonIntensity].
bool IsValidCarbonIntensity(double value);

// How long a zone's last good value is used after its source starts failing, when the spec does
// not say. The Carbon Aware SDK's data is hourly (Electricity Maps) or 5-minutely (WattTime), and a
// grid's intensity moves by tens of percent over hours, not minutes: an hour-old value is still a
// fair guess, a day-old one is not. Past the hold the zone is unknown (and the condition says why).
inline constexpr std::chrono::seconds kDefaultCarbonHold = std::chrono::hours(1);

// The most often one source (a URL and a set of zones) is asked: 5 minutes, the finest step the
// SDK's providers publish (WattTime's), so polling faster reads the same value again. It holds for
// failed polls too, so that a failing SDK is not hammered (12 tries within the default hold).
inline constexpr std::chrono::seconds kMinCarbonPollInterval = std::chrono::minutes(5);

// Zones one table keeps; more are refused (Update and Fail return false). A pool's workers span a
// handful of zones; this only bounds memory against a label gone wild.
inline constexpr std::size_t kMaxCarbonZones = 1024;

// A zone whose value is not usable now, with why: for a CarbonIntensityAvailable condition.
struct ZoneIntensityError {
  std::string zone;
  std::string error;     // the source's last error, or why the last value is no longer used
  SteadyTime failed_at;  // the last failure (the last good value's time when none failed since)
};

// What a table holds of one zone: its last good value and when it was read, and the source's
// error since then and when it came.
struct ZoneReading {
  std::optional<double> value;
  SteadyTime value_at;
  std::optional<std::string> error;  // since the last good value
  SteadyTime error_at;
};

// Per zone: the last good value, kept for at most `hold` after it was read, then unknown.
class ZoneIntensities {
 public:
  // Throws std::invalid_argument for a negative hold.
  explicit ZoneIntensities(std::chrono::seconds hold = kDefaultCarbonHold);

  // A good reading at `at`: replaces the zone's value and clears its error. A value that is not
  // IsValidCarbonIntensity is recorded as a failure instead (returns false), as is nothing for a
  // reading older than the one held (returns true: it is not an error, just late).
  bool Update(std::string_view zone, double value, SteadyTime at);
  // The source failed for `zone` at `at`: the value (if any) is kept until its hold ends.
  // Returns false only when the table is full and `zone` is new.
  bool Fail(std::string_view zone, std::string error, SteadyTime at);
  // The zone's value when it was read within the hold before `now`; else nullopt.
  std::optional<double> Get(std::string_view zone, SteadyTime now) const;
  // Every known zone without a usable value at `now`, sorted by zone.
  std::vector<ZoneIntensityError> Errors(SteadyTime now) const;
  // Takes another table's reading of `zone`, as Update(its value, its value_at) then, when its
  // error is as new or newer, Fail(its error, its error_at): a pool's table, with the pool's hold,
  // fed from a source's table shared by several pools. Returns false only when the table is full.
  bool Take(std::string_view zone, const ZoneReading& reading);
  // The zone's reading; nullptr for a zone the table does not hold.
  const ZoneReading* Reading(std::string_view zone) const;
  // Drops every zone not in `zones` (the pool no longer has workers there).
  void RetainOnly(std::span<const std::string> zones);

  std::size_t size() const { return zones_.size(); }
  std::chrono::seconds hold() const { return hold_; }

 private:
  ZoneReading* Find(std::string_view zone);  // creates it when there is room; nullptr when full

  std::chrono::seconds hold_;
  std::map<std::string, ZoneReading, std::less<>> zones_;
};

// The key of one poll: the URL and the zone set, sorted and without duplicates, so that the same
// zones in another order are the same poll.
std::string PollKey(std::string_view url, std::span<const std::string> zones);

// When each key may be polled again: at most once per `min_interval`, whether the poll succeeded
// or not. Keeps at most kMaxCarbonZones keys (the oldest attempt is forgotten first).
class PollSchedule {
 public:
  // Throws std::invalid_argument for a negative interval.
  explicit PollSchedule(std::chrono::seconds min_interval = kMinCarbonPollInterval);

  // Never attempted, or the last attempt was at least min_interval before `now`.
  bool Due(std::string_view key, SteadyTime now) const;
  // A poll of `key` started at `at`.
  void Attempted(std::string_view key, SteadyTime at);
  // When `key` is due next; nullopt for a key never attempted (due now).
  std::optional<SteadyTime> NextDue(std::string_view key) const;

  std::chrono::seconds min_interval() const { return min_interval_; }

 private:
  std::chrono::seconds min_interval_;
  std::map<std::string, SteadyTime, std::less<>> last_;
};

}  // namespace eoc::signals
