// The InferencePool CRD on a real API server (1.20): it installs, also again and from several
// processes at once; the samples apply; kubectl shows the printer columns and knows the short
// name; the API server applies the schema's defaults, which are the table's; it refuses what the
// schema forbids, naming the field; and a status written through the status subresource comes
// back whole (nothing pruned).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <mutex>
#include <sstream>

#include "api/defaults.h"
#include "api/inference_pool.h"
#include "child_process.h"
#include "common/files.h"
#include "common/text.h"
#include "crds.h"
#include "eventually.h"
#include "files.h"
#include "namespaced_test.h"

namespace eoc::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const kube::ResourceRef kInferencePools{"eoc.dev", "v1alpha1", "inferencepools"};

struct KubectlRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

class CrdTest : public testing::NamespacedTest {
 protected:
  void SetUp() override {
    testing::NamespacedTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    kubectl_ = FindExecutable("kubectl").value_or("");
    if (kubectl_.empty()) GTEST_SKIP() << "kubectl is not on PATH";
    ASSERT_EQ(testing::InstallCrds(*plane_), "");
  }

  // kubectl with the plane's kubeconfig and a discovery cache of this test's own.
  KubectlRun Kubectl(std::vector<std::string> args) {
    args.insert(args.begin(), {kubectl_, "--kubeconfig", plane_->Var("EOC_KUBECONFIG"),
                               "--cache-dir", dir_.Path("kube-cache"), "--request-timeout", "60s"});
    testing::ChildProcess child(args, /*merge_stderr=*/true);
    const int status = child.Wait();
    std::string output;
    std::istringstream lines(child.Output());
    for (std::string line; std::getline(lines, line);)
      output += std::string(TrimWhitespace(line)) + "\n";
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
  }

  std::string WriteManifest(const json& spec, const std::string& name = "pool") {
    const json object = {{"apiVersion", kApiVersion},
                         {"kind", kKind},
                         {"metadata", {{"name", name}, {"namespace", ns_}}},
                         {"spec", spec}};
    return dir_.Write(name + ".json", object.dump());
  }

  static json GoodSpec() {
    return {{"selector", {{"matchLabels", {{"app", "chat"}}}}}, {"targetPort", 8000}};
  }

  testing::TempDir dir_;
  std::string kubectl_;
};

TEST_F(CrdTest, InstallingAgainChangesNothing) {
  const KubectlRun again = Kubectl({"apply", "-f", EOC_CRDS_DIR});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("customresourcedefinition.apiextensions.k8s.io/"
                                      "inferencepools.eoc.dev"));
  const KubectlRun wait = Kubectl(
      {"wait", "--for", "condition=established", "--timeout", "60s", "crd/inferencepools.eoc.dev"});
  EXPECT_EQ(wait.exit_code, 0) << wait.output;
}

TEST_F(CrdTest, SamplesApplyAndKubectlShowsTheColumns) {
  const KubectlRun apply =
      Kubectl({"apply", "-n", ns_, "-f", std::string(EOC_CRDS_DIR) + "/samples"});
  ASSERT_EQ(apply.exit_code, 0) << apply.output;
  EXPECT_THAT(apply.output, HasSubstr("inferencepool.eoc.dev/vllm-llama created"));
  EXPECT_THAT(apply.output, HasSubstr("inferencepool.eoc.dev/sglang-qwen created"));

  const KubectlRun get = Kubectl({"get", "inferencepools", "-n", ns_});
  ASSERT_EQ(get.exit_code, 0) << get.output;
  std::istringstream lines(get.output);
  std::string header;
  std::getline(lines, header);
  std::istringstream words(header);
  std::vector<std::string> columns{std::istream_iterator<std::string>(words), {}};
  EXPECT_THAT(columns, ::testing::ElementsAre("NAME", "READY", "DESIRED", "STRATEGY", "AGE"));
  EXPECT_THAT(get.output, ::testing::ContainsRegex("sglang-qwen +CarbonWeighted +[0-9]+s"));
  EXPECT_THAT(get.output, ::testing::ContainsRegex("vllm-llama +JouleWeighted +[0-9]+s"));

  for (const char* name : {"eocpool", "inferencepool", "inferencepools.eoc.dev"}) {
    const KubectlRun by_name = Kubectl({"get", name, "-n", ns_, "-o", "name"});
    EXPECT_EQ(by_name.exit_code, 0) << by_name.output;
    EXPECT_EQ(by_name.output,
              "inferencepool.eoc.dev/sglang-qwen\ninferencepool.eoc.dev/vllm-llama\n");
  }
}

TEST_F(CrdTest, TheApiServerAppliesTheTablesConstantDefaults) {
  ASSERT_TRUE(client_->Create(kInferencePools, ns_,
                              {{"apiVersion", kApiVersion},
                               {"kind", kKind},
                               {"metadata", {{"name", "minimal"}}},
                               {"spec", GoodSpec()}}));
  auto stored = client_->Get(kInferencePools, ns_, "minimal");
  ASSERT_TRUE(stored) << stored.error().ToString();
  for (const DefaultRow& row : DefaultsTable()) {
    std::string pointer = "/spec/" + row.field;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const json::json_pointer at(pointer);
    if (!row.constant) {
      EXPECT_FALSE(stored->contains(at)) << row.field << " depends on other fields";
      continue;
    }
    ASSERT_TRUE(stored->contains(at)) << row.field << " was not defaulted";
    json expected = json::parse(row.value, nullptr, /*allow_exceptions=*/false);
    if (expected.is_discarded()) expected = row.value;  // a string
    const json& got = (*stored)[at];
    if (expected.is_number()) {
      EXPECT_EQ(got.get<double>(), expected.get<double>()) << row.field;
    } else {
      EXPECT_EQ(got, expected) << row.field;
    }
  }
  const InferencePool pool = ParseInferencePool(*stored);
  EXPECT_TRUE(pool.errors.empty());
  EXPECT_EQ(pool.ns, ns_);
  EXPECT_EQ(pool.generation, 1);
}

TEST_F(CrdTest, SchemaViolationsAreRefusedNamingTheField) {
  struct Bad {
    json patch;
    std::string field;
  };
  const std::vector<Bad> cases = {
      {{{"targetPort", 70000}}, "spec.targetPort"},
      {{{"engine", "foo"}}, "spec.engine"},
      {{{"selector", nullptr}}, "spec.selector"},
      {{{"models", {"llama", "llama"}}}, "spec.models"},
      {{{"metrics", {{"path", "metrics"}}}}, "spec.metrics.path"},
      {{{"routing", {{"sessionAffinity", {{"ttlSeconds", 0}}}}}},
       "spec.routing.sessionAffinity.ttlSeconds"},
      {{{"autoscaling", {{"upscalingFactor", 0}}}}, "spec.autoscaling.upscalingFactor"},
      {{{"carbon", {{"static", {{"eu-west-1", -5}}}}}}, "spec.carbon.static"},
      {{{"carbon", {{"carbonAwareSdk", {{"url", "ftp://carbon"}}}}}},
       "spec.carbon.carbonAwareSdk.url"},
      {{{"targetPort", "8000"}}, "spec.targetPort"},
  };
  for (const Bad& c : cases) {
    json spec = GoodSpec();
    spec.merge_patch(c.patch);
    // --validate=false: the API server refuses it, not kubectl's check against the schema.
    const KubectlRun apply = Kubectl({"apply", "--validate=false", "-f", WriteManifest(spec)});
    EXPECT_NE(apply.exit_code, 0) << c.patch;
    EXPECT_THAT(apply.output, HasSubstr("is invalid")) << c.patch;
    EXPECT_THAT(apply.output, HasSubstr(c.field)) << c.patch;
    // The parser names the same field.
    const InferencePool parsed =
        ParseInferencePool({{"metadata", {{"name", "pool"}}}, {"spec", spec}});
    ASSERT_FALSE(parsed.errors.empty()) << c.patch;
    EXPECT_THAT(parsed.errors.front().field, ::testing::StartsWith(c.field)) << c.patch;
  }
  // A cross-field rule is the controller's: the API server takes it.
  json spec = GoodSpec();
  spec["autoscaling"] = {{"minReplicas", 5}, {"maxReplicas", 2}};
  const KubectlRun apply = Kubectl({"apply", "-f", WriteManifest(spec)});
  EXPECT_EQ(apply.exit_code, 0) << apply.output;
}

InferencePoolStatus FullStatus() {
  InferencePoolStatus s;
  s.observed_generation = 1;
  s.ready_workers = 2;
  s.desired_replicas = 3;
  s.last_scale_time = "2026-11-30T10:00:00Z";
  s.conditions = {{"Ready", "True", "Serving", "2 of 3 workers ready", "2026-11-30T09:00:00Z", 1},
                  {"SpecValid", "True", "Valid", "", "2026-11-30T09:00:00Z", 1}};
  s.routing = RoutingTable{"JouleWeighted",
                           42,
                           {{"w-a", "10.0.0.1:8000", 1000, false, 1LL << 35U, 16, {"llama"}},
                            {"w-b", "10.0.0.2:8000", 0, true, 0, 32, {}}}};
  return s;
}

TEST_F(CrdTest, StatusComesBackWhole) {
  ASSERT_TRUE(client_->Create(kInferencePools, ns_,
                              {{"apiVersion", kApiVersion},
                               {"kind", kKind},
                               {"metadata", {{"name", "pool"}}},
                               {"spec", GoodSpec()}}));
  const InferencePoolStatus status = FullStatus();
  auto patched = client_->Patch(kInferencePools, ns_, "pool", kube::PatchType::kMerge,
                                {{"status", ToJson(status)}}, "status");
  ASSERT_TRUE(patched) << patched.error().ToString();
  auto stored = client_->Get(kInferencePools, ns_, "pool");
  ASSERT_TRUE(stored) << stored.error().ToString();
  EXPECT_EQ((*stored)["status"], ToJson(status));
  EXPECT_EQ(ParseInferencePool(*stored).status, status);

  const KubectlRun get = Kubectl({"get", "eocpool", "pool", "-n", ns_});
  EXPECT_THAT(get.output, ::testing::ContainsRegex("pool +2 +3 +JouleWeighted"));
}

TEST_F(CrdTest, AStatusOutsideTheSchemaIsRefused) {
  ASSERT_TRUE(client_->Create(kInferencePools, ns_,
                              {{"apiVersion", kApiVersion},
                               {"kind", kKind},
                               {"metadata", {{"name", "pool"}}},
                               {"spec", GoodSpec()}}));
  // (On 1.20 the status subresource does not check that condition types are unique:
  // SetCondition keeps them so.)
  InferencePoolStatus bad_weight = FullStatus();
  bad_weight.routing->workers[0].weight = 1001;
  InferencePoolStatus bad_condition = FullStatus();
  bad_condition.conditions[0].status = "Maybe";
  InferencePoolStatus bad_time = FullStatus();
  bad_time.last_scale_time = "yesterday";
  const std::vector<std::pair<InferencePoolStatus, std::string>> cases = {
      {bad_weight, "status.routing.workers.weight"},
      {bad_condition, "status.conditions.status"},
      {bad_time, "status.lastScaleTime"}};
  for (const auto& [status, field] : cases) {
    auto patched = client_->Patch(kInferencePools, ns_, "pool", kube::PatchType::kMerge,
                                  {{"status", ToJson(status)}}, "status");
    ASSERT_FALSE(patched) << field;
    EXPECT_EQ(patched.error().code, 422) << field;
    EXPECT_THAT(patched.error().message, HasSubstr(field));
  }
}

}  // namespace
}  // namespace eoc::api
