// RFC 3339 times as Kubernetes writes them (metav1.Time).
//
//   auto t = eoc::ParseRfc3339("2026-11-30T10:00:00Z");   // nullopt when not such a time
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace eoc {

// 2026-11-30T10:00:00Z, with optional fractional seconds and a Z or +hh:mm / -hh:mm offset.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text);

}  // namespace eoc
