#include "kube/credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/rfc3339.h"
#include "files.h"
#include "kube/exec_plugin.h"
#include "kube/token_file.h"

namespace eoc::kube {
namespace {

namespace fs = std::filesystem;
using eoc::testing::ReadFile;
using eoc::testing::TempDir;
using std::chrono::seconds;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kTestdata = EOC_TESTDATA_DIR;
const std::string kPlugin = kTestdata + "/exec_plugin.sh";
constexpr const char* kV1 = "client.authentication.k8s.io/v1";
constexpr const char* kV1beta1 = "client.authentication.k8s.io/v1beta1";

std::chrono::system_clock::time_point Utc(std::string_view rfc3339) {
  const auto t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.has_value()) << rfc3339;
  return t.value_or(std::chrono::system_clock::time_point{});
}

template <typename Get>
std::string CredentialErrorOf(Get get) {
  try {
    get();
  } catch (const CredentialError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no CredentialError thrown";
  return "";
}

// --- Static ---------------------------------------------------------------------------------

TEST(CredentialStaticTest, TokenAndCertificateAsConfigured) {
  RestConfig cfg;
  cfg.token = "t";
  cfg.client_cert_pem = "cert";
  cfg.client_key_pem = "key";
  const ManualClock clock;
  const auto source = MakeCredentialSource(cfg, clock);
  const Credentials want{"t", "cert", "key"};
  EXPECT_EQ(source->Get(), want);
  source->Invalidate();
  EXPECT_EQ(source->Get(), want);
}

// --- Token file -----------------------------------------------------------------------------

class CredentialTokenFileTest : public ::testing::Test {
 protected:
  std::unique_ptr<CredentialSource> Source() {
    RestConfig cfg;
    cfg.token = "static-token";  // the file wins over it
    cfg.token_file = file_;
    cfg.client_cert_pem = "cert";
    cfg.client_key_pem = "key";
    return MakeCredentialSource(cfg, clock_);
  }

  TempDir dir_;
  const std::string file_ = dir_.Write("token", "first\n");
  ManualClock clock_;
};

TEST_F(CredentialTokenFileTest, RereadsOncePerPeriod) {
  const auto source = Source();
  EXPECT_EQ(source->Get(), (Credentials{"first", "cert", "key"}));
  dir_.Write("token", "  second  \n");
  clock_.Advance(kTokenFileRereadPeriod - seconds(1));
  EXPECT_EQ(source->Get().token, "first");
  clock_.Advance(seconds(1));
  EXPECT_EQ(source->Get().token, "second");
  dir_.Write("token", "third");
  clock_.Advance(kTokenFileRereadPeriod / 2);
  EXPECT_EQ(source->Get().token, "second");  // the period restarts at each read
}

TEST_F(CredentialTokenFileTest, InvalidateForcesAReread) {
  const auto source = Source();
  EXPECT_EQ(source->Get().token, "first");
  dir_.Write("token", "second");
  EXPECT_EQ(source->Get().token, "first");
  source->Invalidate();
  EXPECT_EQ(source->Get().token, "second");
}

TEST_F(CredentialTokenFileTest, KeepsThePreviousTokenWhenARereadFails) {
  const auto source = Source();
  EXPECT_EQ(source->Get().token, "first");
  fs::remove(file_);
  clock_.Advance(kTokenFileRereadPeriod);
  EXPECT_EQ(source->Get().token, "first");
  dir_.Write("token", "");
  source->Invalidate();
  EXPECT_EQ(source->Get().token, "first");
  dir_.Write("token", "second");
  source->Invalidate();
  EXPECT_EQ(source->Get().token, "second");
}

TEST_F(CredentialTokenFileTest, FailsWithoutAPreviousToken) {
  fs::remove(file_);
  const auto source = Source();
  EXPECT_THAT(CredentialErrorOf([&] { source->Get(); }),
              AllOf(HasSubstr("token file " + file_), HasSubstr("No such file or directory")));
  dir_.Write("token", " \n");
  EXPECT_THAT(CredentialErrorOf([&] { source->Get(); }), HasSubstr("the file is empty"));
  dir_.Write("token", "now");  // a failed first read is retried at once, not after a period
  EXPECT_EQ(source->Get().token, "now");
}

TEST_F(CredentialTokenFileTest, RefusesAnOversizedFile) {
  dir_.Write("token", std::string(kMaxTokenFileBytes + 1, 'x'));
  EXPECT_THAT(CredentialErrorOf([&] { Source()->Get(); }), HasSubstr("larger than 1048576 bytes"));
}

// --- Exec plugin through the credential source --------------------------------------------------

ExecConfig Plugin(std::vector<std::string> args,
                  std::vector<std::pair<std::string, std::string>> env = {}) {
  ExecConfig exec;
  exec.api_version = kV1;
  exec.command = kPlugin;
  exec.args = std::move(args);
  exec.env = std::move(env);
  exec.interactive_mode = "Never";
  return exec;
}

class CredentialExecTest : public ::testing::Test {
 protected:
  CredentialExecTest() { clock_.SetWall(Utc("2029-12-31T23:00:00Z")); }

  std::unique_ptr<CredentialSource> Source(
      const std::string& mode, std::vector<std::pair<std::string, std::string>> env = {}) {
    env.emplace_back("RUNS_FILE", runs_file_);
    RestConfig cfg;
    cfg.server = "https://api.example.test";
    cfg.exec = Plugin({mode}, std::move(env));
    return MakeCredentialSource(cfg, clock_);
  }

  int Runs() const {
    std::ifstream in(runs_file_);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
  }

  TempDir dir_;
  const std::string runs_file_ = dir_.Path("runs");
  ManualClock clock_;
};

TEST_F(CredentialExecTest, CachesUntilShortlyBeforeExpiry) {
  const auto source = Source("token", {{"EXPIRY", "2030-01-01T00:00:00Z"}});
  EXPECT_EQ(source->Get().token, "token-1");
  EXPECT_EQ(source->Get().token, "token-1");
  clock_.SetWall(Utc("2029-12-31T23:59:49Z"));  // 11 s left: still good
  EXPECT_EQ(source->Get().token, "token-1");
  EXPECT_EQ(Runs(), 1);
  clock_.Advance(seconds(1));  // 10 s left: fetch anew
  EXPECT_EQ(source->Get().token, "token-2");
  EXPECT_EQ(Runs(), 2);
}

TEST_F(CredentialExecTest, WithoutExpiryCachedUntilInvalidate) {
  const auto source = Source("token");
  EXPECT_EQ(source->Get().token, "token-1");
  clock_.Advance(std::chrono::hours(24 * 365));
  EXPECT_EQ(source->Get().token, "token-1");
  source->Invalidate();
  EXPECT_EQ(source->Get().token, "token-2");
  EXPECT_EQ(source->Get().token, "token-2");
  EXPECT_EQ(Runs(), 2);
}

TEST_F(CredentialExecTest, InvalidateRunsThePluginAgainBeforeExpiry) {
  const auto source = Source("token", {{"EXPIRY", "2030-01-01T00:00:00Z"}});
  EXPECT_EQ(source->Get().token, "token-1");
  source->Invalidate();
  EXPECT_EQ(source->Get().token, "token-2");
}

TEST_F(CredentialExecTest, V1beta1) {
  RestConfig cfg;
  cfg.exec = Plugin({"token"}, {{"API_VERSION", kV1beta1}});
  cfg.exec->api_version = kV1beta1;
  cfg.exec->interactive_mode = "IfAvailable";
  EXPECT_EQ(MakeCredentialSource(cfg, clock_)->Get().token, "token-0");
}

TEST_F(CredentialExecTest, ClientCertificateFromThePlugin) {
  const auto source = Source("cert");
  const Credentials c = source->Get();
  EXPECT_EQ(c.token, "");
  EXPECT_EQ(c.client_cert_pem, ReadFile(kTestdata + "/client.crt"));
  EXPECT_EQ(c.client_key_pem, ReadFile(kTestdata + "/client.key"));
}

TEST_F(CredentialExecTest, ConfiguredCertificateKeptWhenThePluginGivesOnlyAToken) {
  RestConfig cfg;
  cfg.exec = Plugin({"token"});
  cfg.client_cert_pem = "cert";
  cfg.client_key_pem = "key";
  cfg.token_file = dir_.Write("token", "file-token");  // exec wins over a token file
  EXPECT_EQ(MakeCredentialSource(cfg, clock_)->Get(), (Credentials{"token-0", "cert", "key"}));
}

TEST_F(CredentialExecTest, ConcurrentGetsRunThePluginOnce) {
  const auto source = Source("slow");
  std::vector<std::string> tokens(4);
  std::vector<std::thread> threads;
  threads.reserve(tokens.size());
  for (std::string& token : tokens) {
    threads.emplace_back([&source, &token] { token = source->Get().token; });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& token : tokens) EXPECT_EQ(token, "token-1");
  EXPECT_EQ(Runs(), 1);
}

TEST_F(CredentialExecTest, AFailureIsACredentialErrorAndIsRetried) {
  const auto source = Source("fail");
  EXPECT_THAT(CredentialErrorOf([&] { source->Get(); }), HasSubstr("exited with status 3"));
  EXPECT_THAT(CredentialErrorOf([&] { source->Get(); }), HasSubstr("exited with status 3"));
  EXPECT_EQ(Runs(), 2);
}

TEST_F(CredentialExecTest, OutputLargerThanTheLimit) {
  EXPECT_THAT(CredentialErrorOf([&] { Source("huge")->Get(); }),
              AllOf(StartsWith("exec plugin \"" + kPlugin + "\": "),
                    HasSubstr("printed more than " + std::to_string(kExecMaxOutputBytes) +
                              " bytes on stdout")));
}

TEST_F(CredentialExecTest, InteractiveAlwaysFailsAtGet) {
  RestConfig cfg;
  cfg.exec = Plugin({"token"});
  cfg.exec->interactive_mode = "Always";
  const auto source = MakeCredentialSource(cfg, clock_);  // constructing it is fine
  EXPECT_THAT(CredentialErrorOf([&] { source->Get(); }),
              AllOf(HasSubstr(kPlugin), HasSubstr("interactiveMode is Always")));
}

TEST_F(CredentialExecTest, FromTheTestdataKubeconfig) {
  // The command is relative to the kubeconfig, and its env reaches the plugin.
  const RestConfig cfg = LoadKubeconfig({kTestdata + "/kubeconfig.yaml"}, "exec-v1");
  EXPECT_EQ(MakeCredentialSource(cfg, clock_)->Get().token, "hello");
}

// --- RunExecPlugin ------------------------------------------------------------------------------

std::string RunError(const ExecConfig& exec, const ExecLimits& limits = {}) {
  return CredentialErrorOf([&] { RunExecPlugin(exec, ExecClusterInfo{}, limits); });
}

int OpenDescriptors() {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++count;
  }
  return count;
}

TEST(ExecPluginTest, PassesExecInfoWithClusterInfo) {
  const TempDir dir;
  ExecConfig exec = Plugin({"token"}, {{"EXEC_INFO_FILE", dir.Path("info")}});
  exec.provide_cluster_info = true;
  const ExecClusterInfo cluster{"https://api.example.test:6443", "kubernetes", "hello", true};
  EXPECT_EQ(RunExecPlugin(exec, cluster).token, "token-0");
  const auto info = nlohmann::json::parse(ReadFile(dir.Path("info")));
  EXPECT_EQ(info["apiVersion"], kV1);
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], "https://api.example.test:6443");
  EXPECT_EQ(info["spec"]["cluster"]["tls-server-name"], "kubernetes");
  EXPECT_EQ(info["spec"]["cluster"]["insecure-skip-tls-verify"], true);
  EXPECT_EQ(info["spec"]["cluster"]["certificate-authority-data"], "aGVsbG8=");  // "hello"
}

TEST(ExecPluginTest, NoClusterInfoUnlessAskedFor) {
  const TempDir dir;
  ExecConfig exec =
      Plugin({"token"}, {{"EXEC_INFO_FILE", dir.Path("info")}, {"API_VERSION", kV1beta1}});
  exec.api_version = kV1beta1;
  RunExecPlugin(exec, ExecClusterInfo{"https://h", "", "ca", false}, {});
  const auto info = nlohmann::json::parse(ReadFile(dir.Path("info")));
  EXPECT_EQ(info["apiVersion"], kV1beta1);
  EXPECT_FALSE(info["spec"].contains("cluster"));
}

TEST(ExecPluginTest, ArgsEnvAndPathLookup) {
  ExecConfig exec = Plugin({kPlugin, "args", "a b", "c"});
  exec.command = "sh";  // no slash: found on PATH
  EXPECT_EQ(RunExecPlugin(exec, {}).token, "a b c");
  EXPECT_EQ(
      RunExecPlugin(Plugin({"env"}, {{"PLUGIN_GREETING", "x"}, {"PLUGIN_GREETING", "hi"}}), {})
          .token,
      "hi");  // the last of a repeated name wins
}

TEST(ExecPluginTest, ExpiryWithFractionAndOffset) {
  const ExecResult r =
      RunExecPlugin(Plugin({"token"}, {{"EXPIRY", "2030-01-01T02:00:00.5+02:00"}}), {});
  ASSERT_TRUE(r.expiry.has_value());
  EXPECT_EQ(*r.expiry, Utc("2030-01-01T00:00:00Z") + std::chrono::milliseconds(500));
}

TEST(ExecPluginTest, NonZeroExitIncludesTheTailOfStderr) {
  const std::string message = RunError(Plugin({"fail"}));
  EXPECT_THAT(message,
              AllOf(StartsWith("exec plugin \"" + kPlugin + "\": "),
                    HasSubstr("exited with status 3"), HasSubstr("stderr: ..."),
                    HasSubstr("error: the plugin broke"), Not(HasSubstr("noise line 0\n"))));
  EXPECT_LT(message.size(), 4096 + 512);
}

TEST(ExecPluginTest, NotFoundOnPathWithInstallHint) {
  ExecConfig exec = Plugin({});
  exec.command = "eoc-no-such-plugin";
  exec.install_hint = "Install it with: apt install eoc-plugin";
  EXPECT_THAT(RunError(exec), AllOf(StartsWith("exec plugin \"eoc-no-such-plugin\": "),
                                    HasSubstr("executable not found on PATH"),
                                    HasSubstr("Install it with: apt install eoc-plugin")));
}

TEST(ExecPluginTest, NotFoundAtAPath) {
  ExecConfig exec = Plugin({});
  exec.command = "/nonexistent/eoc-plugin";
  exec.install_hint = "hint";
  EXPECT_THAT(RunError(exec), AllOf(HasSubstr("/nonexistent/eoc-plugin"),
                                    HasSubstr("executable not found"), HasSubstr("hint")));
}

TEST(ExecPluginTest, AMissingInterpreterIsNotReportedAsNotFound) {
  const TempDir dir;
  const std::string script = dir.Write("plugin", "#!/nonexistent/interpreter\n");
  fs::permissions(script, fs::perms::owner_all);
  ExecConfig exec = Plugin({});
  exec.command = script;
  EXPECT_THAT(RunError(exec),
              AllOf(HasSubstr("cannot run " + script), HasSubstr("No such file or directory"),
                    Not(HasSubstr("executable not found"))));
}

TEST(ExecPluginTest, InvalidJsonWithoutEchoingTheOutput) {
  const std::string message = RunError(Plugin({"no-json"}));
  EXPECT_THAT(message, AllOf(HasSubstr("not valid JSON"), Not(HasSubstr("abc"))));
}

// Refused while parsing, before anything could recurse on it.
TEST(ExecPluginTest, OutputNestedTooDeepIsRefused) {
  EXPECT_THAT(RunError(Plugin({"deep"})), HasSubstr("its output: nested deeper than 512 levels"));
}

TEST(ExecPluginTest, ApiVersionMismatch) {
  EXPECT_THAT(RunError(Plugin({"token"}, {{"API_VERSION", kV1beta1}})),
              HasSubstr("apiVersion \"client.authentication.k8s.io/v1beta1\" in its output does "
                        "not match the configured \"client.authentication.k8s.io/v1\""));
}

TEST(ExecPluginTest, MalformedCredentials) {
  EXPECT_THAT(RunError(Plugin({"no-token"})), HasSubstr("status.token: missing"));
  EXPECT_THAT(RunError(Plugin({"wrong-kind"})), HasSubstr("kind \"Secret\""));
  EXPECT_THAT(RunError(Plugin({"cert-without-key"})),
              HasSubstr("status.clientCertificateData given without status.clientKeyData"));
  EXPECT_THAT(RunError(Plugin({"bad-expiry"})),
              HasSubstr("status.expirationTimestamp \"tomorrow\" is not an RFC 3339 time"));
}

TEST(ExecPluginTest, TimeoutKillsAndReapsThePlugin) {
  ExecLimits limits;
  limits.timeout = std::chrono::milliseconds(300);
  EXPECT_THAT(RunError(Plugin({"hang"}), limits), HasSubstr("timed out after 300ms"));
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // no child left, not even a zombie
  EXPECT_EQ(errno, ECHILD);
}

TEST(ExecPluginTest, OutputLimitIsEnforced) {
  ExecLimits limits;
  limits.max_output_bytes = 100;
  EXPECT_THAT(RunError(Plugin({"cert"}), limits), HasSubstr("printed more than 100 bytes"));
}

TEST(ExecPluginTest, AFloodOnStderrDoesNotStallIt) {
  EXPECT_EQ(RunExecPlugin(Plugin({"stderr-flood"}), {}).token, "after-flood");
}

TEST(ExecPluginTest, LeaksNoDescriptors) {
  const int before = OpenDescriptors();
  RunExecPlugin(Plugin({"token"}), {});
  RunError(Plugin({"fail"}));
  ExecLimits limits;
  limits.timeout = std::chrono::milliseconds(100);
  RunError(Plugin({"hang"}), limits);
  EXPECT_EQ(OpenDescriptors(), before);
}

}  // namespace
}  // namespace eoc::kube
