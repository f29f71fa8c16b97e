// The Helm chart installed with real helm (scripts/helm) on the control plane, and eoc-controller
// run off-cluster as a pod of the chart would run: with a kubeconfig holding a token of the
// chart's ServiceAccount, and the arguments of the chart's Deployment, the Secrets it mounts
// written to files as the kubelet writes them.
//
//   ASSERT_TRUE(eoc::testing::Helm(*plane_, {"install", "eoc-operator", eoc::testing::kChart,
//                                            "--namespace", release_ns}));
//   const std::string kubeconfig =
//       eoc::testing::TokenKubeconfig(*plane_, dir, TokenOf(release_ns, "eoc-operator"));
//   const eoc::testing::ChartPod pod =
//       eoc::testing::ChartPodOf(*client_, release_ns, "eoc-operator", dir);
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "child_process.h"
#include "common/text.h"
#include "control_plane.h"
#include "files.h"
#include "kube/client.h"

namespace eoc::testing {

inline const kube::ResourceRef kSecrets{"", "v1", "secrets"};

inline constexpr const char* kHelm = EOC_SOURCE_DIR "/scripts/helm";
inline constexpr const char* kChart = EOC_SOURCE_DIR "/charts/eoc-operator";

// Runs helm with `args` against the control plane, to its end (at most two minutes); whether it
// succeeded, the test failing with its output when not.
inline bool Helm(const ControlPlane& plane, std::vector<std::string> args) {
  args.insert(args.begin(), kHelm);
  args.insert(args.end(), {"--kubeconfig", plane.Var("EOC_KUBECONFIG")});
  const RunResult run = RunToExit(args);
  EXPECT_TRUE(run.ok) << "helm " << args[1] << ": " << run.output;
  return run.ok;
}

// A kubeconfig in `dir` for the control plane that authenticates with `token`; its path.
inline std::string TokenKubeconfig(const ControlPlane& plane, const TempDir& dir,
                                   const std::string& token) {
  return dir.Write("kubeconfig",
                   "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n"
                   "    server: " +
                       plane.server() + "\n    certificate-authority: " + plane.Var("EOC_KUBE_CA") +
                       "\nusers:\n- name: sa\n  user:\n    token: " + token +
                       "\ncontexts:\n- name: sa\n  context:\n    cluster: local\n    user: sa\n"
                       "current-context: sa\n");
}

// Writes the Secret `name` of `ns` to the folder `folder` of `dir`, a file for each key, as the
// kubelet does (its keys and certificates recorded with RecordSecret), and returns the folder's
// path; "" when the Secret cannot be read, which fails the test.
inline std::string WriteSecret(kube::Client& client, const std::string& ns, const std::string& name,
                               const TempDir& dir, const std::string& folder) {
  auto secret = client.Get(kSecrets, ns, name);
  EXPECT_TRUE(secret) << ns << "/" << name;
  if (!secret) return "";
  for (const auto& [key, value] : (*secret)["data"].items()) {
    const auto decoded = Base64Decode(value.get<std::string>());
    EXPECT_TRUE(decoded) << name << " " << key;
    RecordSecret(decoded.value_or(""));
    (void)dir.Write((std::filesystem::path(folder) / key).string(), decoded.value_or(""));
  }
  return dir.Path(folder);
}

// The chart's Deployment as eoc-controller runs off-cluster: its container's arguments, less the
// namespaces and addresses that FleetTest sets (the same namespaces; loopback ports), with the
// folders of `dir` that the Secrets it mounts are written to (WriteSecret) in place of their
// mount paths; and the names of those Secrets.
struct ChartPod {
  std::vector<std::string> args;
  std::vector<std::string> secrets;
};
inline ChartPod ChartPodOf(kube::Client& client, const std::string& ns, const std::string& name,
                           const TempDir& dir) {
  ChartPod out;
  auto deployment = client.Get(kube::resources::kDeployments, ns, name);
  EXPECT_TRUE(deployment) << ns << "/" << name;
  if (!deployment) return out;
  const nlohmann::json& pod = (*deployment)["spec"]["template"]["spec"];
  const nlohmann::json& container = pod["containers"][0];
  std::vector<std::pair<std::string, std::string>> mounts;  // mount path, folder written
  for (const nlohmann::json& volume : pod.value("volumes", nlohmann::json::array())) {
    if (!volume.contains("secret")) continue;
    const std::string folder = volume.value("name", "");  // the volume's name
    const std::string secret_name = volume["secret"].value("secretName", "");
    const std::string written = WriteSecret(client, ns, secret_name, dir, folder);
    out.secrets.push_back(secret_name);
    for (const nlohmann::json& mount : container.value("volumeMounts", nlohmann::json::array())) {
      if (mount.value("name", "") == folder) {
        mounts.emplace_back(mount.value("mountPath", ""), written);
      }
    }
  }
  for (const nlohmann::json& arg : container.value("args", nlohmann::json::array())) {
    auto a = arg.get<std::string>();
    if (a.starts_with("--namespace=") || a.find("-bind-address=") != std::string::npos) continue;
    for (const auto& [mounted, written] : mounts) {
      if (const auto at = a.find("=" + mounted + "/"); at != std::string::npos) {
        a.replace(at + 1, mounted.size(), written);
      }
    }
    out.args.push_back(a);
  }
  return out;
}

}  // namespace eoc::testing
