// Bearer token files (a kubeconfig's tokenFile, the service account's token): read by config
// (once, for a clear error at start) and by credentials (again, as the file rotates).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace eoc::kube {

// Reads a bearer token file (at most kMaxTokenFileBytes), trimmed of surrounding whitespace as
// client-go trims it. An empty token is an error: sending "Bearer " would only earn a 401. On
// failure returns nullopt and sets *error to why.
inline constexpr std::size_t kMaxTokenFileBytes = std::size_t{1} << 20;
std::optional<std::string> ReadTokenFile(const std::string& path, std::string* error);

}  // namespace eoc::kube
