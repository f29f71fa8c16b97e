// Where the API server is and how to authenticate to it: kubeconfig files as kubectl reads them,
// and the in-cluster service-account environment.
//
//   eoc::kube::LoadOptions opts;            // --kubeconfig and --context from the command line
//   opts.kubeconfig = flag_kubeconfig;
//   eoc::kube::RestConfig cfg = eoc::kube::LoadConfig(opts);   // throws ConfigError
//
// Precedence, as kubectl: an explicit --kubeconfig file; else the files listed in $KUBECONFIG
// (colon-separated, merged: the first file to define a name or the current-context wins); else
// the in-cluster config when KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are set; else
// ~/.kube/config. Every error names the file and the field, e.g.
//   kubeconfig /home/a/.kube/config: contexts[0].context.cluster "prod" is not defined in clusters
//
// As kubectl, only the context in use, its cluster and its user are validated (and their files
// read); a broken entry elsewhere is ignored. Beyond kubectl: client certificate and key must be
// PEM and belong together, auth-provider and basic auth are refused (use an exec plugin), and a
// server URL may carry a path prefix but no userinfo, query or fragment (common/url.h checks it).
//
// The files behind it, and the one way their includes point (nothing points back up):
//   config.cc (LoadConfig: the precedence)
//     -> kubeconfig.cc (files, merging, contexts, clusters) -> kubeconfig_user.cc (users)
//          -> kubeconfig_field.h (YAML nodes named by path)
//     -> in_cluster.cc (the service account)
//   both -> tls_material.h (PEM checks), token_file.h, common/url.h, common/files.h
//   credentials.h -> config.h;  credentials.cc -> exec_plugin.h -> config.h
//   credentials.h, exec_plugin.h -> credential_error.h
// config knows nothing of credentials or exec plugins beyond the ExecConfig it parses.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace eoc::kube {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// users[].user.exec: a credential plugin (client.authentication.k8s.io ExecCredential).
struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command;      // a relative command path is resolved against the kubeconfig's folder
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string interactive_mode = "IfAvailable";  // Never | IfAvailable | Always; we have no tty
  bool provide_cluster_info = false;
  std::string install_hint;
};

// Everything needed to reach and authenticate to one API server.
struct RestConfig {
  std::string server;  // https://host:port, no trailing slash
  std::string tls_server_name;
  std::string ca_pem;  // the cluster CA bundle (PEM); empty: the system's roots
  bool insecure_skip_tls_verify = false;
  std::string client_cert_pem;  // client certificate and key (PEM), both or neither
  std::string client_key_pem;
  std::string token;       // a static bearer token
  std::string token_file;  // a bearer token file, re-read as it rotates (wins over `token`)
  std::optional<ExecConfig> exec;
  std::string ns = "default";  // the context's namespace, or the service account's
  std::string source;          // where this came from, for messages: a file, or "in-cluster"
};

// Reads the process environment by default; tests inject their own.
using GetEnv = std::function<std::optional<std::string>(const std::string&)>;
GetEnv ProcessEnv();
// env(name), with an empty value read as unset (as client-go reads these variables).
std::optional<std::string> NonEmptyEnv(const GetEnv& env, const std::string& name);

struct LoadOptions {
  std::string kubeconfig;  // --kubeconfig: one explicit file, overrides $KUBECONFIG
  std::string context;     // --context: overrides current-context
  GetEnv env = ProcessEnv();
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// Loads one or more kubeconfig files, merged as kubectl merges $KUBECONFIG, and resolves the
// context (`context`, if not empty, else current-context). Files that do not exist are skipped
// when more than one is given, as kubectl does; a single missing file is an error.
RestConfig LoadKubeconfig(const std::vector<std::string>& files, const std::string& context = "");

// The in-cluster config: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the service
// account's token file (re-read as it rotates), ca.crt and namespace from `service_account_dir`.
// The namespace is $POD_NAMESPACE if set, else the namespace file, else "default" (client-go's
// order). The token and ca.crt must be readable now.
RestConfig InClusterConfig(
    const GetEnv& env = ProcessEnv(),
    const std::string& service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// The kubectl precedence described at the top of this file. `context` does not apply to the
// in-cluster config (it has no contexts). When nothing is found, the error lists what was tried.
RestConfig LoadConfig(const LoadOptions& options);

}  // namespace eoc::kube
