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

nlohmann::json ExporterDaemonSet(const std::string& name, ExporterKind kind, int port,
                                 const std::map<std::string, std::string>& node_selector) {
  using nlohmann::json;
  const json labels = {{"app", name}};
  const bool dcgm = kind == ExporterKind::kDcgm;
  const json container = {
      {"name", "exporter"},
      {"image", dcgm ? "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
                     : "quay.io/sustainable_computing_io/kepler:release-0.7.12"},
      {"ports", json::array({{{"containerPort", port}, {"name", "metrics"}}})}};
  json pod_spec = {{"automountServiceAccountToken", false},
                   {"containers", json::array({container})}};
  if (!node_selector.empty()) pod_spec["nodeSelector"] = node_selector;
  return {{"apiVersion", "apps/v1"},
          {"kind", "DaemonSet"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec",
           {{"selector", {{"matchLabels", labels}}},
            {"template",
             {{"metadata",
               {{"labels", labels},
                // fake_worker.h's kExporterAnnotation, which the node agent reads
                {"annotations", {{"fake.eoc.dev/exporter", dcgm ? "dcgm" : "kepler"}}}}},
              {"spec", pod_spec}}}}}};
}

}  // namespace eoc::testing
