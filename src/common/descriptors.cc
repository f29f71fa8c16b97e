#include "common/descriptors.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>

#include "common/files.h"

namespace eoc {
namespace {

std::uint64_t FromRlim(rlim_t value) {
  return value == RLIM_INFINITY ? kNoDescriptorLimit : static_cast<std::uint64_t>(value);
}

rlim_t ToRlim(std::uint64_t value) {
  return value == kNoDescriptorLimit ? RLIM_INFINITY : static_cast<rlim_t>(value);
}

std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) {
  return a > kNoDescriptorLimit - b ? kNoDescriptorLimit : a + b;
}

}  // namespace

std::optional<DescriptorPlan> PlanDescriptors(const DescriptorLimits& limits,
                                              std::span<const DescriptorUse> uses,
                                              std::string* error) {
  DescriptorPlan plan;
  std::string sum;
  for (const DescriptorUse& use : uses) {
    plan.needed = SaturatingAdd(plan.needed, use.count);
    if (!sum.empty()) sum += " + ";
    sum += use.what + " " + std::to_string(use.count);
  }
  if (limits.hard != kNoDescriptorLimit && plan.needed > limits.hard) {
    *error = "the open-files limit is too low: " + sum + " = " + std::to_string(plan.needed) +
             " descriptors, over the hard limit of " + std::to_string(limits.hard) +
             " (ulimit -Hn); lower those flags or raise the hard limit";
    return std::nullopt;
  }
  // No hard limit (RLIM_INFINITY, which Linux does not allow for open files): enough for the uses.
  plan.soft = limits.hard == kNoDescriptorLimit ? std::max(limits.soft, plan.needed) : limits.hard;
  plan.soft = std::max(plan.soft, limits.soft);
  return plan;
}

std::optional<DescriptorLimits> ReadDescriptorLimits(std::string* error) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    *error = "cannot read the open-files limit: " + ErrnoText(errno);
    return std::nullopt;
  }
  return DescriptorLimits{.soft = FromRlim(limit.rlim_cur), .hard = FromRlim(limit.rlim_max)};
}

bool SetSoftDescriptorLimit(std::uint64_t soft, std::string* error) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    *error = "cannot read the open-files limit: " + ErrnoText(errno);
    return false;
  }
  limit.rlim_cur = ToRlim(soft);
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    *error = "cannot raise the soft open-files limit to " + std::to_string(soft) + ": " +
             ErrnoText(errno);
    return false;
  }
  return true;
}

}  // namespace eoc
