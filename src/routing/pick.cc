#include "routing/pick.h"

#include <array>

#include "common/enum_name.h"

namespace eoc::routing {
namespace {

constexpr std::array<EnumName<PickReason>, 5> kReasonNames{{
    {PickReason::kSession, "session"},
    {PickReason::kSessionOverflow, "session-overflow"},
    {PickReason::kPrefix, "prefix"},
    {PickReason::kStrategy, "strategy"},
    {PickReason::kQueued, "queued"},
}};

constexpr std::array<EnumName<PickStatus>, 9> kStatusNames{{
    {PickStatus::kPicked, "picked"},
    {PickStatus::kNoRoom, "no-room"},
    {PickStatus::kQueued, "queued"},
    {PickStatus::kQueueFull, "queue-full"},
    {PickStatus::kUnavailable, "unavailable"},
    {PickStatus::kNotPublished, "not-published"},
    {PickStatus::kTimedOut, "timed-out"},
    {PickStatus::kUnknownModel, "unknown-model"},
    {PickStatus::kTooLarge, "too-large"},
}};

}  // namespace

std::string_view ToString(PickReason reason) { return EnumToString(reason, kReasonNames); }

std::string_view ToString(PickStatus status) { return EnumToString(status, kStatusNames); }

}  // namespace eoc::routing
