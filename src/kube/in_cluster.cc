// InClusterConfig: the API server and credentials a pod's service account gives.
#include <filesystem>

#include "common/files.h"
#include "common/text.h"
#include "common/url.h"
#include "kube/config.h"
#include "kube/tls_material.h"
#include "kube/token_file.h"

namespace eoc::kube {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxNamespaceFileBytes = 4096;

[[noreturn]] void FailInCluster(std::string_view message) {
  throw ConfigError("in-cluster config: " + std::string(message));
}

std::string RequiredEnv(const GetEnv& env, const std::string& name) {
  std::optional<std::string> value = NonEmptyEnv(env, name);
  if (!value) FailInCluster(name + " is not set");
  return *value;
}

// client-go's order: $POD_NAMESPACE, the service account's namespace file, "default".
std::string InClusterNamespace(const GetEnv& env, const std::string& file) {
  if (std::optional<std::string> ns = NonEmptyEnv(env, "POD_NAMESPACE")) return *ns;
  std::string error;
  const std::optional<std::string> text = ReadFileLimited(file, kMaxNamespaceFileBytes, &error);
  const std::string_view ns = text ? TrimWhitespace(*text) : std::string_view();
  return ns.empty() ? "default" : std::string(ns);
}

}  // namespace

RestConfig InClusterConfig(const GetEnv& env, const std::string& service_account_dir) {
  const std::string host = RequiredEnv(env, "KUBERNETES_SERVICE_HOST");
  const std::string port = RequiredEnv(env, "KUBERNETES_SERVICE_PORT");
  // An IPv6 address needs brackets in a URL, as Go's net.JoinHostPort adds them.
  const bool ipv6 = host.find(':') != std::string::npos && !host.starts_with('[');
  const std::string authority = (ipv6 ? "[" + host + "]" : host) + ":" + port;
  if (!IsServerAuthority(authority)) {
    FailInCluster("KUBERNETES_SERVICE_HOST " + Quoted(host) + " and KUBERNETES_SERVICE_PORT " +
                  Quoted(port) + " do not make a host:port");
  }
  RestConfig config;
  config.server = "https://" + authority;
  const fs::path dir(service_account_dir);
  config.token_file = (dir / "token").string();
  std::string error;
  if (!ReadTokenFile(config.token_file, &error)) {
    FailInCluster("service account token " + config.token_file + ": " + error);
  }
  const std::string ca_file = (dir / "ca.crt").string();
  std::optional<std::string> ca = ReadFileLimited(ca_file, kMaxPemFileBytes, &error);
  if (!ca) FailInCluster("service account CA " + ca_file + ": " + error);
  if (!HasPemCertificate(*ca)) {
    FailInCluster("service account CA " + ca_file + ": no PEM certificate found");
  }
  config.ca_pem = std::move(*ca);
  config.ns = InClusterNamespace(env, (dir / "namespace").string());
  config.source = "in-cluster";
  return config;
}

}  // namespace eoc::kube
