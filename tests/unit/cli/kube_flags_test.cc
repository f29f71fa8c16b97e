// The command-line setup the binaries share: what the flags set, and how Main reports.
#include "cli/kube_flags.h"

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "files.h"

namespace eoc::cli {
namespace {

// Runs Main over `args` (after the program name) with `run`.
int RunMain(std::vector<std::string> args, KubeFlags& flags, const std::function<int()>& run) {
  CLI::App app{"test"};
  AddKubeFlags(app, flags);
  AddLogLevelFlag(app, flags);
  args.insert(args.begin(), "eoc-test");
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (std::string& arg : args) argv.push_back(arg.data());
  return Main(app, static_cast<int>(argv.size()), argv.data(), flags, "test", run);
}

// As above, with a `run` that records that it ran and returns `result`.
int RunMain(std::vector<std::string> args, KubeFlags& flags, bool& ran, int result = 0) {
  return RunMain(std::move(args), flags, [&ran, result] {
    ran = true;
    return result;
  });
}

TEST(KubeFlags, SetLoadClientAndLogLevel) {
  KubeFlags flags;
  bool ran = false;
  EXPECT_EQ(RunMain({"--kubeconfig", "/k", "--context", "c", "--kube-api-qps", "5",
                     "--kube-api-burst", "7", "--log-level", "warn"},
                    flags, ran, 3),
            3);
  EXPECT_TRUE(ran);
  EXPECT_EQ(flags.load.kubeconfig, "/k");
  EXPECT_EQ(flags.load.context, "c");
  EXPECT_EQ(flags.client.qps, 5);
  EXPECT_EQ(flags.client.burst, 7);
  EXPECT_EQ(flags.log_level, "warn");
}

TEST(KubeFlags, DefaultsAreControllerRuntimes) {
  KubeFlags flags;
  bool ran = false;
  EXPECT_EQ(RunMain({}, flags, ran), 0);
  EXPECT_EQ(flags.client.qps, 20);
  EXPECT_EQ(flags.client.burst, 30);
  EXPECT_EQ(flags.log_level, "info");
}

TEST(KubeFlags, BadFlagsAndBadLevelsExitNonZeroWithoutRunning) {
  KubeFlags flags;
  bool ran = false;
  EXPECT_NE(RunMain({"--kube-api-burst", "0"}, flags, ran), 0);
  EXPECT_NE(RunMain({"--no-such-flag"}, flags, ran), 0);
  EXPECT_EQ(RunMain({"--log-level", "loud"}, flags, ran), 1);
  EXPECT_FALSE(ran);
}

TEST(KubeFlags, AnExceptionFromRunExitsOne) {
  KubeFlags flags;
  EXPECT_EQ(RunMain({}, flags, []() -> int { throw std::runtime_error("boom"); }), 1);
}

TEST(Connect, LoadsTheConfigTheFlagsName) {
  const testing::TempDir dir;
  KubeFlags flags;
  flags.load.kubeconfig = dir.Write("config", R"(
current-context: c
contexts: [{name: c, context: {cluster: k, namespace: team}}]
clusters: [{name: k, cluster: {server: "https://127.0.0.1:6443"}}]
)");
  const Connection api = Connect(flags);
  EXPECT_EQ(api.config.server, "https://127.0.0.1:6443");
  EXPECT_EQ(api.config.ns, "team");
  EXPECT_NE(api.client, nullptr);
  flags.load.kubeconfig = dir.Path("absent");
  EXPECT_THROW(Connect(flags), kube::ConfigError);
}

}  // namespace
}  // namespace eoc::cli
