// RFC 3339 times as Kubernetes writes them: metav1.Time (whole seconds) and metav1.MicroTime.
//
//   auto t = eoc::ParseRfc3339("2026-11-30T10:00:00Z");   // nullopt when not such a time
//   eoc::FormatRfc3339(now)                                // "2026-11-30T10:00:00Z"
//   eoc::FormatRfc3339Micro(now)                           // "2026-11-30T10:00:00.123456Z"
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace eoc {

// 2026-11-30T10:00:00Z, with optional fractional seconds and a Z or +hh:mm / -hh:mm offset.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text);

// metav1.Time: UTC, whole seconds (truncated).
std::string FormatRfc3339(std::chrono::system_clock::time_point t);
// metav1.MicroTime: UTC, microseconds (truncated).
std::string FormatRfc3339Micro(std::chrono::system_clock::time_point t);

}  // namespace eoc
