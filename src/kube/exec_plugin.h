// Internal to src/kube: running an exec credential plugin (client.authentication.k8s.io
// ExecCredential, as client-go does), and the few small helpers (bounded file reads, trimming,
// list splitting, quoting) that config.cc and credentials.cc share with it. Not part of the
// module's public interface; config.h and credentials.h are.
//
//   eoc::kube::ExecClusterInfo cluster{.server = cfg.server, .ca_pem = cfg.ca_pem};
//   eoc::kube::ExecResult r = eoc::kube::RunExecPlugin(*cfg.exec, cluster);  // throws
//   if (r.expiry && clock.WallNow() >= *r.expiry) { ... run it again ... }
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/config.h"
#include "kube/credentials.h"

namespace eoc::kube {

// What the plugin answered (status of its ExecCredential).
struct ExecResult {
  std::string token;            // may be empty when a client certificate is given
  std::string client_cert_pem;  // both or neither
  std::string client_key_pem;
  // status.expirationTimestamp; absent: valid until the API server rejects it.
  std::optional<std::chrono::system_clock::time_point> expiry;
};

// The cluster the credential is for; passed to the plugin (in KUBERNETES_EXEC_INFO) only when
// the kubeconfig asks for it with provideClusterInfo.
struct ExecClusterInfo {
  std::string server;
  std::string tls_server_name;
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
};

// Bounds on one run. The defaults are the public ones of credentials.h; tests shorten them.
struct ExecLimits {
  std::chrono::milliseconds timeout = kExecTimeout;
  std::size_t max_output_bytes = kExecMaxOutputBytes;  // stdout; stderr keeps only a tail
};

// Runs the plugin once, with stdin on /dev/null (we never have a terminal), and parses its
// ExecCredential. A command without a slash is looked up on PATH; one with a slash is used as it
// is (config.cc has already made a kubeconfig-relative one absolute). The plugin runs in its own
// process group, which is killed as a whole on timeout or oversized output, and it is always
// reaped. Throws CredentialError naming the command and what went wrong.
ExecResult RunExecPlugin(const ExecConfig& exec, const ExecClusterInfo& cluster,
                         const ExecLimits& limits = {});

// RFC 3339 as Kubernetes writes it (metav1.Time): 2026-11-30T10:00:00Z, with optional fractional
// seconds and a Z or +hh:mm / -hh:mm offset. nullopt when `text` is not such a time.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text);

// Reads a whole regular file of at most `max_bytes`. On failure returns nullopt and sets *error to
// why ("No such file or directory", "larger than 1048576 bytes", ...), so that each caller can
// name the file and field in its own error type.
std::optional<std::string> ReadFileLimited(const std::string& path, std::size_t max_bytes,
                                           std::string* error);

// Reads a bearer token file (at most kMaxTokenFileBytes), trimmed of surrounding whitespace as
// client-go trims it. An empty token is an error: sending "Bearer " would only earn a 401.
inline constexpr std::size_t kMaxTokenFileBytes = std::size_t{1} << 20;
std::optional<std::string> ReadTokenFile(const std::string& path, std::string* error);

// `value` in double quotes for an error message, cut short after 100 bytes: values come from files
// and plugins, and may be megabytes long.
std::string Quoted(std::string_view value);

// A colon-separated list ($PATH, $KUBECONFIG) split into its entries, empty ones included
// ("a::b" gives "a", "", "b"; "" gives one empty entry), as each list gives those its own meaning.
std::vector<std::string> SplitPathList(std::string_view list);

// `text` without leading and trailing ASCII whitespace.
std::string_view TrimWhitespace(std::string_view text);

}  // namespace eoc::kube
