#include "api/names.h"

#include <gtest/gtest.h>

#include <string>

namespace eoc::api {
namespace {

TEST(IsDnsSubdomain, KubernetesObjectNames) {
  EXPECT_TRUE(IsDnsSubdomain("vllm-llama"));
  EXPECT_TRUE(IsDnsSubdomain("a.b-c.d0"));
  EXPECT_TRUE(IsDnsSubdomain("0"));
  const std::string longest = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                              std::string(63, 'c') + "." + std::string(61, 'd');
  EXPECT_EQ(longest.size(), 253U);
  EXPECT_TRUE(IsDnsSubdomain(longest));
  EXPECT_FALSE(IsDnsSubdomain(longest + "e"));
  EXPECT_FALSE(IsDnsSubdomain(""));
  EXPECT_FALSE(IsDnsSubdomain("Upper"));
  EXPECT_FALSE(IsDnsSubdomain("-a"));
  EXPECT_FALSE(IsDnsSubdomain("a-"));
  EXPECT_FALSE(IsDnsSubdomain("a..b"));
  EXPECT_FALSE(IsDnsSubdomain("a.b."));
  EXPECT_FALSE(IsDnsSubdomain("under_score"));
  EXPECT_FALSE(IsDnsSubdomain(std::string(64, 'a')));  // one part is at most 63
  EXPECT_FALSE(IsDnsSubdomain(std::string(254, 'a')));
}

TEST(IsLabelKey, OptionalPrefixThenName) {
  EXPECT_TRUE(IsLabelKey("app"));
  EXPECT_TRUE(IsLabelKey("app.kubernetes.io/name"));
  EXPECT_TRUE(IsLabelKey("topology.kubernetes.io/region"));
  EXPECT_TRUE(IsLabelKey("nvidia.com/gpu.product"));
  EXPECT_TRUE(IsLabelKey("A_b-C.d"));
  EXPECT_TRUE(IsLabelKey(std::string(63, 'k')));
  EXPECT_FALSE(IsLabelKey(std::string(64, 'k')));
  EXPECT_FALSE(IsLabelKey(""));
  EXPECT_FALSE(IsLabelKey("/name"));
  EXPECT_FALSE(IsLabelKey("prefix/"));
  EXPECT_FALSE(IsLabelKey("Upper.Prefix/name"));
  EXPECT_FALSE(IsLabelKey("a/b/c"));
  EXPECT_FALSE(IsLabelKey("bad key"));
  EXPECT_FALSE(IsLabelKey("_leading"));
  EXPECT_FALSE(IsLabelKey("trailing-"));
}

TEST(IsLabelValue, MayBeEmpty) {
  EXPECT_TRUE(IsLabelValue(""));
  EXPECT_TRUE(IsLabelValue("NVIDIA-A100-SXM4-80GB"));
  EXPECT_TRUE(IsLabelValue("eu-west-1"));
  EXPECT_TRUE(IsLabelValue(std::string(63, 'v')));
  EXPECT_FALSE(IsLabelValue(std::string(64, 'v')));
  EXPECT_FALSE(IsLabelValue("a/b"));
  EXPECT_FALSE(IsLabelValue("a b"));
  EXPECT_FALSE(IsLabelValue(".a"));
}

TEST(IsHttpHeaderName, Token) {
  EXPECT_TRUE(IsHttpHeaderName("x-session-id"));
  EXPECT_TRUE(IsHttpHeaderName("X-Session_ID.v2~!"));
  EXPECT_FALSE(IsHttpHeaderName(""));
  EXPECT_FALSE(IsHttpHeaderName("x session"));
  EXPECT_FALSE(IsHttpHeaderName("x:y"));
  EXPECT_FALSE(IsHttpHeaderName("x\r\ny"));
}

TEST(IsHttpUrl, SchemeHostAndNoSpaces) {
  EXPECT_TRUE(IsHttpUrl("http://carbon-aware-sdk.default.svc:8080"));
  EXPECT_TRUE(IsHttpUrl("https://carbon.example/api/v1?x=1"));
  EXPECT_FALSE(IsHttpUrl("ftp://carbon.example"));
  EXPECT_FALSE(IsHttpUrl("carbon.example"));
  EXPECT_FALSE(IsHttpUrl("http://"));
  EXPECT_FALSE(IsHttpUrl("http:///path"));
  EXPECT_FALSE(IsHttpUrl("https://a b"));
  EXPECT_FALSE(IsHttpUrl("HTTP://upper.example"));
}

TEST(IsModelName, NoCommasOrSpaces) {
  EXPECT_TRUE(IsModelName("meta-llama/Meta-Llama-3-8B-Instruct"));
  EXPECT_TRUE(IsModelName("Qwen/Qwen2.5-7B-Instruct:latest"));
  EXPECT_FALSE(IsModelName(""));
  EXPECT_FALSE(IsModelName("a,b"));
  EXPECT_FALSE(IsModelName("a b"));
  EXPECT_FALSE(IsModelName("a\tb"));
  EXPECT_FALSE(IsModelName(std::string(254, 'm')));
}

TEST(IsUrlPath, AbsoluteWithoutSpaces) {
  EXPECT_TRUE(IsUrlPath("/metrics"));
  EXPECT_TRUE(IsUrlPath("/"));
  EXPECT_FALSE(IsUrlPath("metrics"));
  EXPECT_FALSE(IsUrlPath(""));
  EXPECT_FALSE(IsUrlPath("/a b"));
}

TEST(IsMetricName, PrometheusNames) {
  EXPECT_TRUE(IsMetricName("vllm:num_requests_running"));
  EXPECT_TRUE(IsMetricName("_private"));
  EXPECT_TRUE(IsMetricName(":colon_first"));
  EXPECT_TRUE(IsMetricName("a1"));
  EXPECT_FALSE(IsMetricName(""));
  EXPECT_FALSE(IsMetricName("1a"));
  EXPECT_FALSE(IsMetricName("a-b"));
  EXPECT_FALSE(IsMetricName("a b"));
  EXPECT_FALSE(IsMetricName("a.b"));
}

TEST(IsApiVersionAndKind, AsReferencesNameThem) {
  EXPECT_TRUE(IsApiVersion("apps/v1"));
  EXPECT_TRUE(IsApiVersion("v1"));
  EXPECT_TRUE(IsApiVersion("ray.io/v1alpha1"));
  EXPECT_FALSE(IsApiVersion(""));
  EXPECT_FALSE(IsApiVersion("apps/"));
  EXPECT_FALSE(IsApiVersion("/v1"));
  EXPECT_FALSE(IsApiVersion("Apps/V1"));
  EXPECT_FALSE(IsApiVersion("a/b/c"));
  EXPECT_TRUE(IsKind("Deployment"));
  EXPECT_TRUE(IsKind("RayService2"));
  EXPECT_FALSE(IsKind(""));
  EXPECT_FALSE(IsKind("2Deployment"));
  EXPECT_FALSE(IsKind("Stateful-Set"));
}

}  // namespace
}  // namespace eoc::api
