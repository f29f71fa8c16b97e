#include "routing/wait_queue.h"

#include <algorithm>

namespace eoc::routing {

std::string_view ToString(Admission admission) {
  switch (admission) {
    case Admission::kQueued:
      return "queued";
    case Admission::kFull:
      return "full";
    case Admission::kUnavailable:
      return "unavailable";
    case Admission::kExpired:
      return "expired";
  }
  return "unknown";
}

std::chrono::steady_clock::time_point WaitDeadline(
    std::chrono::steady_clock::time_point now, std::chrono::nanoseconds queue_timeout,
    std::optional<std::chrono::nanoseconds> requested_wait) {
  std::chrono::nanoseconds wait = std::max(queue_timeout, std::chrono::nanoseconds::zero());
  if (requested_wait) wait = std::clamp(*requested_wait, std::chrono::nanoseconds::zero(), wait);
  return now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait);
}

}  // namespace eoc::routing
