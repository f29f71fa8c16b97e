#include "routing/pick.h"

namespace eoc::routing {

std::string_view ToString(PickReason reason) {
  switch (reason) {
    case PickReason::kSession:
      return "session";
    case PickReason::kSessionOverflow:
      return "session-overflow";
    case PickReason::kPrefix:
      return "prefix";
    case PickReason::kStrategy:
      return "strategy";
    case PickReason::kQueued:
      return "queued";
  }
  return "strategy";
}

std::string_view ToString(PickStatus status) {
  switch (status) {
    case PickStatus::kPicked:
      return "picked";
    case PickStatus::kNoRoom:
      return "no-room";
    case PickStatus::kQueued:
      return "queued";
    case PickStatus::kQueueFull:
      return "queue-full";
    case PickStatus::kUnavailable:
      return "unavailable";
    case PickStatus::kNotPublished:
      return "not-published";
    case PickStatus::kTimedOut:
      return "timed-out";
  }
  return "unavailable";
}

}  // namespace eoc::routing
