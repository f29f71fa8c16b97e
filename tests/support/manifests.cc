#include "manifests.h"

namespace eoc::testing {

nlohmann::json WorkerDeployment(const std::string& name, int replicas) {
  using nlohmann::json;
  const json labels = {{"app", name}};
  const json container = {{"name", "vllm"}, {"image", "vllm/vllm-openai:latest"}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", labels}}},
            {"template",
             {{"metadata", {{"labels", labels}}},
              {"spec",
               {{"automountServiceAccountToken", false},
                {"containers", json::array({container})}}}}}}}};
}

}  // namespace eoc::testing
