// Internal to src/kube: running an exec credential plugin (client.authentication.k8s.io
// ExecCredential, as client-go does). Not part of the module's public interface; credentials.h
// is.
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
#include "kube/credential_error.h"

namespace eoc::kube {

// How long an exec plugin may run, and how much it may print, before it is judged failed.
inline constexpr std::chrono::seconds kExecTimeout{60};
inline constexpr std::size_t kExecMaxOutputBytes = 1 << 20;

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

// Bounds on one run; tests shorten them.
struct ExecLimits {
  std::chrono::milliseconds timeout = kExecTimeout;
  std::size_t max_output_bytes = kExecMaxOutputBytes;  // stdout; stderr keeps only a tail
};

// Runs the plugin once, with stdin on /dev/null (we never have a terminal), and parses its
// ExecCredential. A command without a slash is looked up on PATH; one with a slash is used as it
// is (kubeconfig_user.cc has already made a kubeconfig-relative one absolute). The plugin runs in
// its own process group, which is killed as a whole on timeout or oversized output, and it is
// always reaped. Throws CredentialError naming the command and what went wrong.
ExecResult RunExecPlugin(const ExecConfig& exec, const ExecClusterInfo& cluster,
                         const ExecLimits& limits = {});

}  // namespace eoc::kube
