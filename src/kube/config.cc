// LoadConfig: kubectl's precedence over the kubeconfig files (kubeconfig.cc) and the in-cluster
// config (in_cluster.cc).
#include "kube/config.h"

#include <cstdlib>
#include <filesystem>

#include "common/files.h"
#include "common/text.h"

namespace eoc::kube {

GetEnv ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    // Safe while nothing calls setenv concurrently, and this process never sets its environment.
    const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe)
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<std::string> NonEmptyEnv(const GetEnv& env, const std::string& name) {
  std::optional<std::string> value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

RestConfig LoadConfig(const LoadOptions& options) {
  if (!options.kubeconfig.empty()) return LoadKubeconfig({options.kubeconfig}, options.context);
  std::vector<std::string> tried{"--kubeconfig (not given)"};

  std::vector<std::string> listed = SplitPathList(options.env("KUBECONFIG").value_or(""));
  std::erase(listed, "");  // as kubectl, empty entries mean nothing
  if (!listed.empty()) return LoadKubeconfig(listed, options.context);
  tried.emplace_back("$KUBECONFIG (not set)");

  if (NonEmptyEnv(options.env, "KUBERNETES_SERVICE_HOST") &&
      NonEmptyEnv(options.env, "KUBERNETES_SERVICE_PORT")) {
    return InClusterConfig(options.env, options.service_account_dir);
  }
  tried.emplace_back("in-cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT not set)");

  if (const std::optional<std::string> home = NonEmptyEnv(options.env, "HOME")) {
    const std::string file = (std::filesystem::path(*home) / ".kube" / "config").string();
    if (!IsMissingFile(file)) return LoadKubeconfig({file}, options.context);
    tried.push_back(file + " (does not exist)");
  } else {
    tried.emplace_back("~/.kube/config ($HOME not set)");
  }
  throw ConfigError("no Kubernetes configuration found; tried " + Join(tried, ", "));
}

}  // namespace eoc::kube
