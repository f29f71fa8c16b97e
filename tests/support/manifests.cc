#include "manifests.h"

namespace eoc::testing {

nlohmann::json WorkerDeployment(const std::string& name, int replicas,
                                const WorkerDeploymentOptions& options) {
  using nlohmann::json;
  const json labels = {{"app", name}};
  json pod_labels = labels;
  for (const auto& [key, value] : options.pod_labels) pod_labels[key] = value;
  const json container = {{"name", "vllm"}, {"image", "vllm/vllm-openai:latest"}};
  json pod_spec = {{"automountServiceAccountToken", false},
                   {"containers", json::array({container})}};
  if (!options.node_selector.empty()) pod_spec["nodeSelector"] = options.node_selector;
  json pod_meta = {{"labels", pod_labels}};
  if (!options.pod_annotations.empty()) pod_meta["annotations"] = options.pod_annotations;
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", labels}}},
            {"template", {{"metadata", pod_meta}, {"spec", pod_spec}}}}}};
}

}  // namespace eoc::testing
