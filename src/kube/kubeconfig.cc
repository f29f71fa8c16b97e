// LoadKubeconfig: kubeconfig files merged as kubectl merges $KUBECONFIG, and the context in use
// resolved into a RestConfig (its cluster here, its user in kubeconfig_user.cc).
#include <map>

#include "common/files.h"
#include "common/text.h"
#include "common/url.h"
#include "kube/config.h"
#include "kube/kubeconfig_field.h"
#include "kube/kubeconfig_user.h"
#include "kube/tls_material.h"

namespace eoc::kube {
namespace {

using kubeconfig::FailIn;
using kubeconfig::Field;

// Named entries of one kind (clusters, users or contexts): name -> body (e.g. clusters[2].cluster).
using Entries = std::map<std::string, Field>;

// The merge of one or more kubeconfig files.
struct Kubeconfig {
  std::vector<std::string> files;  // those read
  Entries clusters;
  Entries users;
  Entries contexts;
  std::string current_context;
};

// Adds the entries of the list `kind` ({name, <body_key>: {...}} items) that `merged` lacks: the
// first file to define a name wins, as kubectl merges. A name twice in one file is an error, as
// it is for client-go.
void MergeEntries(const Field& root, const std::string& kind, const std::string& body_key,
                  Entries* merged) {
  std::map<std::string, std::string> seen;  // name -> where in this file
  for (const Field& item : root[kind].Items()) {
    const Field name_field = item["name"];
    const std::string name = name_field.String();
    if (name.empty()) name_field.Fail("missing");
    if (const auto [it, inserted] = seen.emplace(name, item.path()); !inserted) {
      name_field.FailValue("is already defined by " + it->second);
    }
    merged->emplace(name, item[body_key]);
  }
}

void MergeFile(const std::string& file, Kubeconfig* merged) {
  const Field root = kubeconfig::ReadDocument(file);
  MergeEntries(root, "clusters", "cluster", &merged->clusters);
  MergeEntries(root, "users", "user", &merged->users);
  MergeEntries(root, "contexts", "context", &merged->contexts);
  if (merged->current_context.empty()) merged->current_context = root["current-context"].String();
  merged->files.push_back(file);
}

std::string ServerUrl(const Field& field) {
  std::string url = field.String();
  if (url.empty()) field.Fail("missing");
  if (!IsServerUrl(url)) field.FailValue("is not an http(s) URL like https://host:6443");
  while (url.ends_with('/')) url.pop_back();
  return url;
}

void ApplyCluster(const Field& cluster, RestConfig* config) {
  config->server = ServerUrl(cluster["server"]);
  config->tls_server_name = cluster["tls-server-name"].String();
  config->insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"].Bool();
  const std::optional<kubeconfig::Pem> ca = ReadPem(cluster, "certificate-authority");
  if (!ca) return;
  if (config->insecure_skip_tls_verify) {
    cluster.Fail("insecure-skip-tls-verify cannot be used together with " + ca->field.name() +
                 " (kubectl refuses this too); give one");
  }
  if (!HasPemCertificate(ca->text)) ca->field.Fail("no PEM certificate found");
  config->ca_pem = ca->text;
}

// The entry of `entries` that `ref` (a context's cluster or user) names; nullopt if it names none.
std::optional<Field> Lookup(const Entries& entries, const Field& ref, const std::string& kind) {
  const std::string name = ref.String();
  if (name.empty()) return std::nullopt;
  const auto it = entries.find(name);
  if (it == entries.end()) ref.FailValue("is not defined in " + kind);
  return it->second;
}

// Only the context in use, its cluster and its user are checked, as kubectl checks: a stale entry
// elsewhere in ~/.kube/config must not stop us.
RestConfig Resolve(const Kubeconfig& kubeconfig, const std::string& context_override) {
  const std::string files = Join(kubeconfig.files, ", ");
  const std::string name = context_override.empty() ? kubeconfig.current_context : context_override;
  if (name.empty()) FailIn(files, "no current-context set and no --context given");
  const auto it = kubeconfig.contexts.find(name);
  if (it == kubeconfig.contexts.end()) FailIn(files, "context " + Quoted(name) + " not found");
  const Field& context = it->second;

  RestConfig config;
  const std::optional<Field> cluster = Lookup(kubeconfig.clusters, context["cluster"], "clusters");
  if (!cluster) context["cluster"].Fail("missing");
  ApplyCluster(*cluster, &config);
  if (const std::optional<Field> user = Lookup(kubeconfig.users, context["user"], "users")) {
    kubeconfig::ApplyUser(*user, &config);
  }
  if (std::string ns = context["namespace"].String(); !ns.empty()) config.ns = std::move(ns);
  config.source = context.source().file;
  return config;
}

}  // namespace

RestConfig LoadKubeconfig(const std::vector<std::string>& files, const std::string& context) {
  if (files.empty()) throw ConfigError("no kubeconfig file given");
  Kubeconfig merged;
  try {
    for (const std::string& file : files) {
      // kubectl skips missing files in a list, but one named alone must exist.
      if (files.size() > 1 && IsMissingFile(file)) continue;
      MergeFile(file, &merged);
    }
    if (merged.files.empty()) {
      throw ConfigError("none of the kubeconfig files exists: " + Join(files, ", "));
    }
    return Resolve(merged, context);
  } catch (const YAML::Exception& e) {
    // Field checks types before reading, so this is a backstop: no yaml-cpp exception escapes.
    FailIn(Join(files, ", "), e.what());
  }
}

}  // namespace eoc::kube
