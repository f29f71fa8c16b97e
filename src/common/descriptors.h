// The process's open-files limit (RLIMIT_NOFILE) against what it may hold open at once: each
// listener's connection cap, the fetches in flight, and a reserve for the rest (API calls and
// watches, the Lease, files). Container runtimes start processes with a soft limit of 1,024 and a
// far higher hard one; a server that keeps the soft one runs out of descriptors at about a
// thousand connections, and then its API calls and Lease renewals fail too. The plan raises the
// soft limit to the hard one and checks that the caps fit under it, so that a limit too low for
// them fails at start, naming the flags, instead of under load.
//
//   std::string error;
//   const eoc::DescriptorUse uses[] = {{"--pick-max-connections", 4096}, {"--fd-reserve", 1024}};
//   const auto limits = eoc::ReadDescriptorLimits(&error);
//   const auto plan = limits ? eoc::PlanDescriptors(*limits, uses, &error) : std::nullopt;
//   if (!plan || !eoc::SetSoftDescriptorLimit(plan->soft, &error)) throw ...(error);
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>

namespace eoc {

// A limit of RLIM_INFINITY: none.
inline constexpr std::uint64_t kNoDescriptorLimit = std::numeric_limits<std::uint64_t>::max();

struct DescriptorLimits {
  std::uint64_t soft = 0;
  std::uint64_t hard = 0;

  bool operator==(const DescriptorLimits&) const = default;
};

// Descriptors one part of the process may hold at once, and what sets that number (a flag, in the
// words an error message shows: "--pick-max-connections").
struct DescriptorUse {
  std::string what;
  std::uint64_t count = 0;
};

struct DescriptorPlan {
  std::uint64_t soft = 0;    // the soft limit to set: the hard one (never below the soft one now)
  std::uint64_t needed = 0;  // every use together
};

// The plan for `limits` and `uses`; nullopt and *error, naming each use with its count, their sum
// and the hard limit, when the uses together do not fit under the hard limit.
std::optional<DescriptorPlan> PlanDescriptors(const DescriptorLimits& limits,
                                              std::span<const DescriptorUse> uses,
                                              std::string* error);

// getrlimit(RLIMIT_NOFILE); nullopt and *error (why, as strerror says) when it fails.
std::optional<DescriptorLimits> ReadDescriptorLimits(std::string* error);
// setrlimit(RLIMIT_NOFILE) with `soft` and the hard limit as it is; false and *error when refused.
bool SetSoftDescriptorLimit(std::uint64_t soft, std::string* error);

}  // namespace eoc
