// The sample pools in crds/samples, read as kubectl sends them, are valid and say what they mean.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/inference_pool.h"
#include "common/yaml_json.h"
#include "yaml_file.h"

namespace eoc::api {
namespace {

using ::testing::ElementsAre;

InferencePool LoadSample(const std::string& name) {
  const nlohmann::json object = testing::LoadYaml(EOC_CRDS_DIR "/samples/" + name);
  EXPECT_EQ(object["apiVersion"], kApiVersion);
  EXPECT_EQ(object["kind"], kKind);
  return ParseInferencePool(object);
}

TEST(Samples, VllmPool) {
  const InferencePool pool = LoadSample("vllm-pool.yaml");
  ASSERT_TRUE(pool.errors.empty()) << pool.errors.front().ToString();
  const InferencePoolSpec& s = pool.spec;
  EXPECT_EQ(pool.name, "vllm-llama");
  EXPECT_EQ(s.engine, Engine::kVllm);
  EXPECT_EQ(s.selector.ToString(), "app=vllm-llama");
  EXPECT_TRUE(s.selector.Matches({{"app", "vllm-llama"}, {"pod-template-hash", "abc"}}));
  EXPECT_EQ(s.target_port, 8000);
  EXPECT_EQ(s.metrics.port, 8000);
  ASSERT_TRUE(s.scale_target_ref);
  EXPECT_EQ(s.scale_target_ref->api_version, "apps/v1");
  EXPECT_EQ(s.scale_target_ref->kind, "Deployment");
  EXPECT_EQ(s.scale_target_ref->name, "vllm-llama");
  EXPECT_TRUE(s.autoscaling.enabled);
  EXPECT_EQ(s.autoscaling.max_replicas, 8);
  EXPECT_EQ(s.routing.strategy, Strategy::kJouleWeighted);
  ASSERT_EQ(s.energy.profiles.size(), 2U);
  EXPECT_EQ(s.energy.profiles[0].accelerator, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(s.energy.profiles[1].accelerator, "NVIDIA-H100-80GB-HBM3");
  for (const auto& profile : s.energy.profiles) {
    EXPECT_GT(profile.energy.max_watts, profile.energy.idle_watts) << profile.accelerator;
  }
}

TEST(Samples, SglangPool) {
  const InferencePool pool = LoadSample("sglang-pool.yaml");
  ASSERT_TRUE(pool.errors.empty()) << pool.errors.front().ToString();
  const InferencePoolSpec& s = pool.spec;
  EXPECT_EQ(pool.name, "sglang-qwen");
  EXPECT_EQ(s.engine, Engine::kSglang);
  EXPECT_EQ(s.selector.ToString(), "app=sglang-qwen,!eoc.dev/canary");
  EXPECT_EQ(s.target_port, 30000);
  EXPECT_FALSE(s.autoscaling.enabled);
  EXPECT_EQ(s.routing.strategy, Strategy::kCarbonWeighted);
  EXPECT_EQ(s.routing.session_affinity.ttl_seconds, 1800);
  EXPECT_THAT(s.carbon.static_intensity,
              ElementsAre(std::pair<const std::string, double>{"eu-central-1", 380},
                          std::pair<const std::string, double>{"eu-north-1", 30}));
  EXPECT_EQ(s.carbon.zone_label, "topology.kubernetes.io/region");
}

}  // namespace
}  // namespace eoc::api
