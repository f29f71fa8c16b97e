#include "kube/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "files.h"

namespace eoc::kube {
namespace {

namespace fs = std::filesystem;
using eoc::testing::ReadFile;
using eoc::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::StartsWith;

const std::string kTestdata = EOC_TESTDATA_DIR;
const std::string kKubeconfig = kTestdata + "/kubeconfig.yaml";
const std::string kOtherKubeconfig = kTestdata + "/other/kubeconfig.yaml";

std::string ReadTestdata(const std::string& name) { return ReadFile(kTestdata + "/" + name); }

GetEnv EnvOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// The ConfigError message of `load`, or a test failure when it does not throw one. Any other
// exception escapes and fails the test too.
template <typename Load>
std::string ErrorOf(Load load) {
  try {
    load();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError thrown";
  return "";
}

std::string LoadError(const std::vector<std::string>& files, const std::string& context = "") {
  return ErrorOf([&] { LoadKubeconfig(files, context); });
}

// --- Good files -----------------------------------------------------------------------------

TEST(ConfigTest, TokenUserWithCaFile) {
  const RestConfig cfg = LoadKubeconfig({kKubeconfig});    // current-context: token
  EXPECT_EQ(cfg.server, "https://api.example.test:6443");  // trailing slash stripped
  EXPECT_EQ(cfg.tls_server_name, "kubernetes.default.svc");
  EXPECT_EQ(cfg.ca_pem, ReadTestdata("ca.crt"));
  EXPECT_FALSE(cfg.insecure_skip_tls_verify);
  EXPECT_EQ(cfg.token, "static-token");
  EXPECT_EQ(cfg.token_file, "");
  EXPECT_EQ(cfg.client_cert_pem, "");
  EXPECT_FALSE(cfg.exec.has_value());
  EXPECT_EQ(cfg.ns, "team-a");
  EXPECT_EQ(cfg.source, kKubeconfig);
}

TEST(ConfigTest, TokenFileIsKeptAsAnAbsolutePath) {
  const RestConfig cfg = LoadKubeconfig({kKubeconfig}, "token-file");
  EXPECT_EQ(cfg.token_file, kTestdata + "/token.txt");
  EXPECT_EQ(cfg.token, "");
  EXPECT_EQ(cfg.server, "https://10.0.0.1");
  EXPECT_EQ(cfg.ca_pem, ReadTestdata("ca.crt"));  // from certificate-authority-data
  EXPECT_EQ(cfg.ns, "default");
}

TEST(ConfigTest, ClientCertificateFilesRelativeToTheKubeconfig) {
  const RestConfig cfg = LoadKubeconfig({kKubeconfig}, "cert-files");
  EXPECT_EQ(cfg.client_cert_pem, ReadTestdata("client.crt"));
  EXPECT_EQ(cfg.client_key_pem, ReadTestdata("client.key"));
  EXPECT_EQ(cfg.token, "");
}

TEST(ConfigTest, ClientCertificateData) {
  const RestConfig cfg = LoadKubeconfig({kKubeconfig}, "cert-data");
  EXPECT_EQ(cfg.client_cert_pem, ReadTestdata("client.crt"));
  EXPECT_EQ(cfg.client_key_pem, ReadTestdata("client.key"));
}

TEST(ConfigTest, InsecureHttpIpv6WithPathPrefixAndNoUser) {
  const RestConfig cfg = LoadKubeconfig({kKubeconfig}, "insecure");
  EXPECT_EQ(cfg.server, "http://[::1]:8080/prefix");
  EXPECT_TRUE(cfg.insecure_skip_tls_verify);
  EXPECT_EQ(cfg.ca_pem, "");
  EXPECT_EQ(cfg.token, "");
  EXPECT_EQ(cfg.client_cert_pem, "");
}

TEST(ConfigTest, ExecV1WithRelativeCommand) {
  const RestConfig cfg = LoadKubeconfig({kKubeconfig}, "exec-v1");
  ASSERT_TRUE(cfg.exec.has_value());
  const ExecConfig& exec = *cfg.exec;
  EXPECT_EQ(exec.api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(exec.command, kTestdata + "/exec_plugin.sh");
  EXPECT_THAT(exec.args, ElementsAre("env", "--verbose"));
  EXPECT_THAT(exec.env, ElementsAre(Pair("PLUGIN_GREETING", "hello")));
  EXPECT_EQ(exec.interactive_mode, "Never");
  EXPECT_TRUE(exec.provide_cluster_info);
  EXPECT_EQ(exec.install_hint, "see the test data folder");
}

TEST(ConfigTest, ExecV1beta1CommandOnPathAndDefaultInteractiveMode) {
  const RestConfig cfg = LoadKubeconfig({kKubeconfig}, "exec-v1beta1");
  ASSERT_TRUE(cfg.exec.has_value());
  EXPECT_EQ(cfg.exec->api_version, "client.authentication.k8s.io/v1beta1");
  EXPECT_EQ(cfg.exec->command, "some-plugin-on-path");  // left for a PATH search
  EXPECT_TRUE(cfg.exec->args.empty());
  EXPECT_EQ(cfg.exec->interactive_mode, "IfAvailable");
  EXPECT_FALSE(cfg.exec->provide_cluster_info);
}

TEST(ConfigTest, ContextOverrideAndUnknownContext) {
  EXPECT_EQ(LoadKubeconfig({kKubeconfig}, "insecure").server, "http://[::1]:8080/prefix");
  const std::string message = LoadError({kKubeconfig}, "nope");
  EXPECT_THAT(message, StartsWith("kubeconfig " + kKubeconfig + ": "));
  EXPECT_THAT(message, HasSubstr("context \"nope\" not found"));
}

TEST(ConfigTest, EmptyFileHasNoContext) {
  const TempDir dir;
  const std::string file = dir.Write("config", "");
  EXPECT_THAT(LoadError({file}), HasSubstr("no current-context set and no --context given"));
}

TEST(ConfigTest, BrokenEntriesThatAreNotUsedAreIgnored) {
  // As kubectl: only the context in use, its cluster and its user are checked.
  const TempDir dir;
  const std::string file = dir.Write("config", R"(
current-context: good
clusters:
- name: good
  cluster: {server: "https://good.example.test"}
- name: broken
  cluster: {server: "ftp://x", certificate-authority-data: "!!!"}
users:
- name: broken
  user: {auth-provider: {name: gcp}}
contexts:
- name: good
  context: {cluster: good}
- name: broken
  context: {cluster: missing, user: broken}
)");
  EXPECT_EQ(LoadKubeconfig({file}).server, "https://good.example.test");
}

TEST(ConfigTest, ValuesOfOtherScalarTypesReadAsText) {
  const TempDir dir;
  const std::string file = dir.Write("config", R"(
current-context: c
clusters: [{name: c, cluster: {server: "https://h", insecure-skip-tls-verify: yes}}]
users: [{name: u, user: {token: 12345}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: ~}}]
)");
  const RestConfig cfg = LoadKubeconfig({file});
  EXPECT_TRUE(cfg.insecure_skip_tls_verify);
  EXPECT_EQ(cfg.token, "12345");
  EXPECT_EQ(cfg.ns, "default");
}

// --- Merging ----------------------------------------------------------------------------------

TEST(ConfigMergeTest, FirstFileWinsPerNameAndForCurrentContext) {
  // Both files define context "token"; the first file's wins, with its cluster and user.
  const RestConfig cfg = LoadKubeconfig({kKubeconfig, kOtherKubeconfig});
  EXPECT_EQ(cfg.server, "https://api.example.test:6443");
  EXPECT_EQ(cfg.token, "static-token");
  EXPECT_EQ(cfg.ns, "team-a");
  EXPECT_EQ(cfg.source, kKubeconfig);
}

TEST(ConfigMergeTest, ReversedOrderReversesTheWinners) {
  const RestConfig cfg = LoadKubeconfig({kOtherKubeconfig, kKubeconfig});  // current: other
  EXPECT_EQ(cfg.server, "https://other.example.test");
  EXPECT_EQ(cfg.ns, "other-ns");
  EXPECT_EQ(cfg.source, kOtherKubeconfig);
  // Context cert-data (first file) now names cluster ca-file, which the other file defines first.
  const RestConfig mixed = LoadKubeconfig({kOtherKubeconfig, kKubeconfig}, "cert-data");
  EXPECT_EQ(mixed.server, "https://overridden.example.test");
  EXPECT_EQ(mixed.client_cert_pem, ReadTestdata("client.crt"));
}

TEST(ConfigMergeTest, RelativePathsAreRelativeToTheFileThatNamesThem) {
  const RestConfig cfg = LoadKubeconfig({kKubeconfig, kOtherKubeconfig}, "other");
  EXPECT_EQ(cfg.ca_pem, ReadTestdata("ca.crt"));  // ../ca.crt from other/
  EXPECT_EQ(cfg.client_cert_pem, ReadTestdata("client.crt"));
  EXPECT_EQ(cfg.client_key_pem, ReadTestdata("client.key"));
}

TEST(ConfigMergeTest, CurrentContextFromTheFirstFileThatSetsIt) {
  const TempDir dir;
  const std::string no_current = dir.Write("a", "clusters: []\n");
  EXPECT_EQ(LoadKubeconfig({no_current, kOtherKubeconfig, kKubeconfig}).ns, "other-ns");
}

TEST(ConfigMergeTest, MissingFilesAreSkippedInAList) {
  const TempDir dir;
  const RestConfig cfg = LoadKubeconfig({dir.Path("missing"), kKubeconfig, dir.Path("gone")});
  EXPECT_EQ(cfg.token, "static-token");
}

TEST(ConfigMergeTest, ASingleMissingFileIsAnError) {
  const TempDir dir;
  const std::string missing = dir.Path("missing");
  EXPECT_THAT(LoadError({missing}),
              AllOf(StartsWith("kubeconfig " + missing + ": "), HasSubstr("cannot read"),
                    HasSubstr("No such file or directory")));
}

TEST(ConfigMergeTest, AllFilesMissingIsAnError) {
  const TempDir dir;
  EXPECT_THAT(LoadError({dir.Path("a"), dir.Path("b")}),
              AllOf(HasSubstr("none of the kubeconfig files exists"), HasSubstr(dir.Path("a")),
                    HasSubstr(dir.Path("b"))));
}

TEST(ConfigMergeTest, AnErrorInASecondFileNamesThatFile) {
  const TempDir dir;
  const std::string broken = dir.Write("broken", "clusters: {}\n");
  EXPECT_THAT(LoadError({kKubeconfig, broken}),
              AllOf(StartsWith("kubeconfig " + broken + ": "),
                    HasSubstr("clusters: expected a list, found a map")));
}

// --- Malformed files ----------------------------------------------------------------------------

struct BadConfig {
  std::string name;
  std::string yaml;  // $TESTDATA stands for the test data folder
  std::vector<std::string> want;
  std::string context;  // --context; "" uses current-context
};

void PrintTo(const BadConfig& c, std::ostream* os) { *os << c.name; }

// A context "c" using cluster "c" and user "u", with the given cluster and user bodies.
std::string OneContext(const std::string& cluster, const std::string& user = "{token: t}") {
  return "current-context: c\n"
         "clusters: [{name: c, cluster: " +
         cluster +
         "}]\n"
         "users: [{name: u, user: " +
         user +
         "}]\n"
         "contexts: [{name: c, context: {cluster: c, user: u}}]\n";
}

std::string WithExec(const std::string& exec) {
  return OneContext("{server: 'https://h'}", "{exec: " + exec + "}");
}

const std::string kServer = "server: 'https://h'";

class ConfigErrorTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigErrorTest, NamesTheFileAndTheField) {
  const TempDir dir;
  std::string yaml = GetParam().yaml;
  for (std::size_t at = yaml.find("$TESTDATA"); at != std::string::npos;
       at = yaml.find("$TESTDATA"))
    yaml.replace(at, 9, kTestdata);
  const std::string file = dir.Write("config", yaml);
  const std::string message = LoadError({file}, GetParam().context);
  EXPECT_THAT(message, StartsWith("kubeconfig " + file + ": "));
  for (const std::string& want : GetParam().want) EXPECT_THAT(message, HasSubstr(want));
}

INSTANTIATE_TEST_SUITE_P(
    ConfigMalformed, ConfigErrorTest,
    ::testing::Values(
        BadConfig{"ContextNamesUndefinedCluster",
                  "clusters: [{name: dev, cluster: {server: 'https://h'}}]\n"
                  "contexts:\n- {name: dev, context: {cluster: dev}}\n"
                  "- {name: prod, context: {cluster: prod}}\n",
                  {"contexts[1].context.cluster \"prod\" is not defined in clusters"},
                  "prod"},
        BadConfig{"ContextNamesUndefinedUser",
                  "current-context: c\nclusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                  "contexts: [{name: c, context: {cluster: c, user: bob}}]\n",
                  {"contexts[0].context.user \"bob\" is not defined in users"}},
        BadConfig{"ContextWithoutCluster",
                  "current-context: c\ncontexts: [{name: c, context: {user: u}}]\n",
                  {"contexts[0].context.cluster: missing"}},
        BadConfig{"ServerMissing",
                  OneContext("{tls-server-name: x}"),
                  {"clusters[0].cluster.server: missing"}},
        BadConfig{"ServerNotHttp",
                  OneContext("{server: 'ftp://h'}"),
                  {"clusters[0].cluster.server \"ftp://h\" is not an http(s) URL"}},
        BadConfig{"ServerWithoutScheme",
                  OneContext("{server: 'h:6443'}"),
                  {"clusters[0].cluster.server \"h:6443\" is not an http(s) URL"}},
        BadConfig{"ServerWithQuery",
                  OneContext("{server: 'https://h/?x=1'}"),
                  {"clusters[0].cluster.server \"https://h/?x=1\" is not an http(s) URL"}},
        BadConfig{"ServerWithBadPort",
                  OneContext("{server: 'https://h:99999'}"),
                  {"clusters[0].cluster.server \"https://h:99999\""}},
        BadConfig{"ServerWithEmptyHost",
                  OneContext("{server: 'https://:443'}"),
                  {"clusters[0].cluster.server \"https://:443\""}},
        BadConfig{"ServerIsAList",
                  OneContext("{server: [a, b]}"),
                  {"clusters[0].cluster.server: expected a string, found a list"}},
        BadConfig{"CaDataNotBase64",
                  OneContext("{" + kServer + ", certificate-authority-data: 'not base64!'}"),
                  {"clusters[0].cluster.certificate-authority-data: invalid base64"}},
        BadConfig{"CaDataNotPem",
                  OneContext("{" + kServer + ", certificate-authority-data: aGVsbG8=}"),
                  {"clusters[0].cluster.certificate-authority-data: no PEM certificate found"}},
        BadConfig{"CaFileMissing",
                  OneContext("{" + kServer + ", certificate-authority: missing/ca.crt}"),
                  {"clusters[0].cluster.certificate-authority: cannot read ", "/missing/ca.crt",
                   "No such file or directory"}},
        BadConfig{"CaFileAndData",
                  OneContext("{" + kServer +
                             ", certificate-authority: $TESTDATA/ca.crt, "
                             "certificate-authority-data: aGVsbG8=}"),
                  {"clusters[0].cluster: both certificate-authority and "
                   "certificate-authority-data given"}},
        BadConfig{"InsecureWithCa",
                  OneContext("{" + kServer +
                             ", insecure-skip-tls-verify: true, "
                             "certificate-authority: $TESTDATA/ca.crt}"),
                  {"clusters[0].cluster: insecure-skip-tls-verify cannot be used together with "
                   "certificate-authority"}},
        BadConfig{"InsecureNotBool",
                  OneContext("{" + kServer + ", insecure-skip-tls-verify: maybe}"),
                  {"clusters[0].cluster.insecure-skip-tls-verify: expected true or false, "
                   "found \"maybe\""}},
        BadConfig{"KeyDataNotBase64",
                  OneContext("{" + kServer + "}",
                             "{client-certificate: $TESTDATA/client.crt, client-key-data: '@@@@'}"),
                  {"users[0].user.client-key-data: invalid base64"}},
        BadConfig{"CertificateWithoutKey",
                  OneContext("{" + kServer + "}", "{client-certificate: $TESTDATA/client.crt}"),
                  {"users[0].user: client-certificate given without client-key"}},
        BadConfig{"KeyWithoutCertificate",
                  OneContext("{" + kServer + "}", "{client-key: $TESTDATA/client.key}"),
                  {"users[0].user: client-key given without client-certificate"}},
        BadConfig{"KeyDoesNotMatchCertificate",
                  OneContext("{" + kServer + "}",
                             "{client-certificate: $TESTDATA/client.crt, "
                             "client-key: $TESTDATA/other.key}"),
                  {"users[0].user: client-key does not match client-certificate"}},
        BadConfig{"KeyIsNotAKey",
                  OneContext("{" + kServer + "}",
                             "{client-certificate: $TESTDATA/client.crt, "
                             "client-key: $TESTDATA/ca.crt}"),
                  {"users[0].user.client-key: no PEM private key found"}},
        BadConfig{"TokenFileMissing",
                  OneContext("{" + kServer + "}", "{tokenFile: nope.txt}"),
                  {"users[0].user.tokenFile: cannot read ", "/nope.txt"}},
        BadConfig{"AuthProvider",
                  OneContext("{" + kServer + "}", "{auth-provider: {name: gcp}}"),
                  {"users[0].user.auth-provider: not supported"}},
        BadConfig{"ExecV1alpha1",
                  WithExec("{apiVersion: client.authentication.k8s.io/v1alpha1, command: p}"),
                  {"users[0].user.exec.apiVersion \"client.authentication.k8s.io/v1alpha1\" is "
                   "not supported"}},
        BadConfig{"ExecApiVersionMissing",
                  WithExec("{command: p}"),
                  {"users[0].user.exec.apiVersion: missing"}},
        BadConfig{"ExecCommandMissing",
                  WithExec("{apiVersion: client.authentication.k8s.io/v1beta1}"),
                  {"users[0].user.exec.command: missing"}},
        BadConfig{"ExecV1WithoutInteractiveMode",
                  WithExec("{apiVersion: client.authentication.k8s.io/v1, command: p}"),
                  {"users[0].user.exec.interactiveMode: missing"}},
        BadConfig{"ExecInvalidInteractiveMode",
                  WithExec("{apiVersion: client.authentication.k8s.io/v1beta1, command: p, "
                           "interactiveMode: Sometimes}"),
                  {"users[0].user.exec.interactiveMode \"Sometimes\" is not one of Never, "
                   "IfAvailable, Always"}},
        BadConfig{"ExecEnvWithoutName",
                  WithExec("{apiVersion: client.authentication.k8s.io/v1beta1, command: p, "
                           "env: [{value: x}]}"),
                  {"users[0].user.exec.env[0].name: missing"}},
        BadConfig{"ExecArgsNotAList",
                  WithExec("{apiVersion: client.authentication.k8s.io/v1beta1, command: p, "
                           "args: {a: b}}"),
                  {"users[0].user.exec.args: expected a list, found a map"}},
        BadConfig{"ClustersIsAMap",
                  "clusters: {c: {server: 'https://h'}}\n",
                  {"clusters: expected a list, found a map"}},
        BadConfig{"ClusterItemIsAString",
                  "clusters: [c]\n",
                  {"clusters[0]: expected a map, found \"c\""}},
        BadConfig{"ClusterBodyIsAString",
                  "current-context: c\nclusters: [{name: c, cluster: oops}]\n"
                  "contexts: [{name: c, context: {cluster: c}}]\n",
                  {"clusters[0].cluster: expected a map, found \"oops\""}},
        BadConfig{"NameMissing", "users: [{user: {token: t}}]\n", {"users[0].name: missing"}},
        BadConfig{"NameDefinedTwice",
                  "contexts: [{name: a, context: {}}, {name: a, context: {}}]\n",
                  {"contexts[1].name \"a\" is already defined by contexts[0]"}},
        BadConfig{"TopLevelIsAList", "- a\n- b\n", {"top level: expected a map, found a list"}},
        BadConfig{"CurrentContextIsAMap",
                  "current-context: {a: b}\n",
                  {"current-context: expected a string, found a map"}},
        BadConfig{"InvalidYaml",
                  "clusters:\n- name: a\n  cluster: {server: [\n",
                  {"not valid YAML at line "}},
        BadConfig{"NoCurrentContext",
                  "clusters: []\n",
                  {"no current-context set and no --context given"}}),
    [](const ::testing::TestParamInfo<BadConfig>& p) { return p.param.name; });

TEST(ConfigTest, InvalidYamlNamesLineAndColumn) {
  const TempDir dir;
  const std::string file = dir.Write("config", "apiVersion: v1\nclusters:\n  - name: [a\n");
  EXPECT_THAT(LoadError({file}),
              AllOf(StartsWith("kubeconfig " + file + ": not valid YAML at line "),
                    HasSubstr(", column ")));
}

TEST(ConfigTest, RefusesAFileLargerThan16MiB) {
  const TempDir dir;
  const std::string file = dir.Write("config", std::string((16 << 20) + 1, '#'));
  EXPECT_THAT(LoadError({file}), AllOf(StartsWith("kubeconfig " + file + ": "),
                                       HasSubstr("larger than 16777216 bytes")));
}

TEST(ConfigTest, DeepNestingIsAnErrorNotACrash) {
  const TempDir dir;
  const std::string file = dir.Write("config", "clusters: " + std::string(100000, '['));
  EXPECT_THAT(LoadError({file}), StartsWith("kubeconfig " + file + ": not valid YAML"));
}

TEST(ConfigTest, AFolderIsNotAKubeconfig) {
  const TempDir dir;
  EXPECT_THAT(LoadError({dir.Path("")}), HasSubstr("not a regular file"));
}

// --- In-cluster -----------------------------------------------------------------------------

class ConfigInClusterTest : public ::testing::Test {
 protected:
  ConfigInClusterTest() {
    dir_.Write("token", "sa-token\n");
    dir_.Write("ca.crt", ReadTestdata("ca.crt"));
    dir_.Write("namespace", "workers\n");
  }

  RestConfig Load(std::map<std::string, std::string> env) {
    return InClusterConfig(EnvOf(std::move(env)), dir_.Path(""));
  }
  std::string Error(std::map<std::string, std::string> env) {
    return ErrorOf([&] { Load(std::move(env)); });
  }

  const std::map<std::string, std::string> env_{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                                {"KUBERNETES_SERVICE_PORT", "443"}};
  TempDir dir_;
};

TEST_F(ConfigInClusterTest, ServiceAccount) {
  const RestConfig cfg = Load(env_);
  EXPECT_EQ(cfg.server, "https://10.96.0.1:443");
  EXPECT_EQ(cfg.token_file, dir_.Path("token"));  // kept as a path: it is re-read as it rotates
  EXPECT_EQ(cfg.token, "");
  EXPECT_EQ(cfg.ca_pem, ReadTestdata("ca.crt"));
  EXPECT_EQ(cfg.ns, "workers");
  EXPECT_EQ(cfg.source, "in-cluster");
  EXPECT_FALSE(cfg.exec.has_value());
}

TEST_F(ConfigInClusterTest, Ipv6HostGetsBrackets) {
  EXPECT_EQ(
      Load({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}}).server,
      "https://[fd00::1]:6443");
}

TEST_F(ConfigInClusterTest, NamespaceDefaultsAndPodNamespaceWins) {
  std::map<std::string, std::string> env = env_;
  env["POD_NAMESPACE"] = "from-env";
  EXPECT_EQ(Load(env).ns, "from-env");
  fs::remove(dir_.Path("namespace"));
  EXPECT_EQ(Load(env_).ns, "default");
}

TEST_F(ConfigInClusterTest, ErrorsNameWhatIsMissing) {
  EXPECT_THAT(Error({{"KUBERNETES_SERVICE_PORT", "443"}}),
              HasSubstr("in-cluster config: KUBERNETES_SERVICE_HOST is not set"));
  EXPECT_THAT(Error({{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", ""}}),
              HasSubstr("in-cluster config: KUBERNETES_SERVICE_PORT is not set"));
  EXPECT_THAT(Error({{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "https"}}),
              HasSubstr("do not make a host:port"));
  fs::remove(dir_.Path("ca.crt"));
  EXPECT_THAT(Error(env_), HasSubstr("service account CA " + dir_.Path("ca.crt") +
                                     ": No such file or directory"));
  dir_.Write("token", " \n");
  EXPECT_THAT(Error(env_),
              HasSubstr("service account token " + dir_.Path("token") + ": the file is empty"));
  fs::remove(dir_.Path("token"));
  EXPECT_THAT(Error(env_), HasSubstr("service account token " + dir_.Path("token") +
                                     ": No such file or directory"));
}

// --- LoadConfig precedence --------------------------------------------------------------------

class ConfigLoadTest : public ::testing::Test {
 protected:
  ConfigLoadTest() {
    sa_.Write("token", "sa-token");
    sa_.Write("ca.crt", ReadTestdata("ca.crt"));
  }

  LoadOptions Options(std::map<std::string, std::string> env) const {
    LoadOptions options;
    options.env = EnvOf(std::move(env));
    options.service_account_dir = sa_.Path("");
    return options;
  }

  TempDir home_;
  TempDir sa_;
  const std::pair<const std::string, std::string> host_{"KUBERNETES_SERVICE_HOST", "10.96.0.1"};
  const std::pair<const std::string, std::string> port_{"KUBERNETES_SERVICE_PORT", "443"};
};

TEST_F(ConfigLoadTest, ExplicitKubeconfigWinsOverEverything) {
  home_.Write(".kube/config", OneContext("{server: 'https://home'}"));
  LoadOptions options =
      Options({{"KUBECONFIG", kOtherKubeconfig}, host_, port_, {"HOME", home_.Path("")}});
  options.kubeconfig = kKubeconfig;
  options.context = "insecure";
  EXPECT_EQ(LoadConfig(options).server, "http://[::1]:8080/prefix");
}

TEST_F(ConfigLoadTest, KubeconfigListIsMergedAndEmptyEntriesIgnored) {
  LoadOptions options = Options({{"KUBECONFIG", ":" + kOtherKubeconfig + "::" + kKubeconfig + ":"},
                                 host_,
                                 port_,
                                 {"HOME", home_.Path("")}});
  EXPECT_EQ(LoadConfig(options).ns, "other-ns");  // other's current-context comes first
  options.context = "cert-data";
  EXPECT_EQ(LoadConfig(options).server, "https://overridden.example.test");
}

TEST_F(ConfigLoadTest, KubeconfigOfOnlySeparatorsCountsAsUnset) {
  const RestConfig cfg = LoadConfig(Options({{"KUBECONFIG", "::"}, host_, port_}));
  EXPECT_EQ(cfg.source, "in-cluster");
}

TEST_F(ConfigLoadTest, InClusterBeforeHome) {
  home_.Write(".kube/config", OneContext("{server: 'https://home'}"));
  const RestConfig cfg = LoadConfig(Options({host_, port_, {"HOME", home_.Path("")}}));
  EXPECT_EQ(cfg.source, "in-cluster");
  EXPECT_EQ(cfg.server, "https://10.96.0.1:443");
}

TEST_F(ConfigLoadTest, InClusterNeedsBothVariables) {
  home_.Write(".kube/config", OneContext("{server: 'https://home'}"));
  EXPECT_EQ(LoadConfig(Options({host_, {"HOME", home_.Path("")}})).server, "https://home");
}

TEST_F(ConfigLoadTest, HomeKubeconfigLast) {
  const std::string file = home_.Write(".kube/config", OneContext("{server: 'https://home'}"));
  const RestConfig cfg = LoadConfig(Options({{"HOME", home_.Path("")}}));
  EXPECT_EQ(cfg.server, "https://home");
  EXPECT_EQ(cfg.source, file);
}

TEST_F(ConfigLoadTest, NothingFoundListsWhatWasTried) {
  const std::string message = ErrorOf([&] { LoadConfig(Options({{"HOME", home_.Path("")}})); });
  EXPECT_THAT(message,
              AllOf(HasSubstr("no Kubernetes configuration found"), HasSubstr("--kubeconfig"),
                    HasSubstr("$KUBECONFIG"), HasSubstr("KUBERNETES_SERVICE_HOST"),
                    HasSubstr(home_.Path(".kube/config") + " (does not exist)")));
  EXPECT_THAT(ErrorOf([&] { LoadConfig(Options({})); }), HasSubstr("$HOME not set"));
}

TEST_F(ConfigLoadTest, ErrorsFromTheChosenSourceAreNotHidden) {
  // A broken explicit file is reported, not skipped in favour of the next source.
  const std::string broken = home_.Write("broken", "clusters: 3\n");
  LoadOptions options = Options({host_, port_});
  options.kubeconfig = broken;
  EXPECT_THAT(ErrorOf([&] { LoadConfig(options); }),
              AllOf(StartsWith("kubeconfig " + broken + ": "), Not(HasSubstr("in-cluster"))));
}

}  // namespace
}  // namespace eoc::kube
