// Reading a Carbon Aware SDK WebAPI answer to `GET /emissions/bylocations?location=A&location=B`:
// a JSON array of {location, time, rating, duration} (rating in gCO2e/kWh), into zone -> rating.
// Pure (no I/O); JSON through nlohmann, which is why it is here and not in src/signals.
//
//   const auto answer = eoc::controller::carbon::ParseEmissionsByLocations(body, {"eastus"});
//   if (answer.error) log(*answer.error);  // "[1].rating: expected a number, got \"70\""
//   for (const auto& [zone, rating] : answer.ratings) ... // 70
//   for (const auto& [zone, why] : answer.missing) ...    // "no entry for location \"westus\""
//
// The rules:
// - The body is at most kMaxEmissionsAnswerBytes, nests at most kMaxEmissionsAnswerDepth levels
//   and holds at most kMaxEmissionsEntries entries; it must be a JSON array (the docs'
//   /emissions/bylocations/best quickstart answers an object: that is another endpoint, refused
//   here).
// - Each entry is an object with a non-empty string `location`, an RFC 3339 `time` and a numeric
//   `rating` that signals::IsValidCarbonIntensity accepts (finite, 0 to 100,000); `duration` and
//   any other member are ignored. One bad entry refuses the whole answer, with its index and member
//   ("[2].rating: -5 is out of range [0, 100000]"): an answer that is wrong in one place is not
//   trusted in the others.
// - Several entries for one location (the SDK answers a time series when asked for a window): the
//   newest `time` wins; on equal times, the first.
// - A zone asked for without an entry is in `missing`, the others still count; entries for zones
//   not asked for are ignored.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace eoc::controller::carbon {

// A few hundred bytes per entry; 1 MiB holds thousands of them, far more than a pool's zones over
// a day of 5-minute data, and bounds what one answer may cost.
inline constexpr std::size_t kMaxEmissionsAnswerBytes = std::size_t{1} << 20;
// An answer nests two levels (an array of objects); 32 leaves the SDK room to add members of its
// own, and checked while parsing it keeps an answer of 100,000 levels from overflowing the stack
// when anything recurses on it.
inline constexpr std::size_t kMaxEmissionsAnswerDepth = 32;
inline constexpr std::size_t kMaxEmissionsEntries = 10'000;

struct EmissionsAnswer {
  std::optional<std::string> error;            // the whole answer was refused: why and where
  std::map<std::string, double> ratings;       // zone -> gCO2e/kWh (empty when refused)
  std::map<std::string, std::string> missing;  // zone asked for -> why it has no rating
};

EmissionsAnswer ParseEmissionsByLocations(std::string_view body,
                                          std::span<const std::string> zones);

}  // namespace eoc::controller::carbon
