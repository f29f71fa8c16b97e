#include "kube/config.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string_view>

#include "common/files.h"
#include "common/text.h"
#include "kube/credentials.h"
#include "kube/exec_plugin.h"

namespace eoc::kube {
namespace {

namespace fs = std::filesystem;

// Nothing read from disk is unbounded. Real kubeconfigs are kilobytes; a public CA bundle is about
// 250 KiB.
constexpr std::size_t kMaxKubeconfigBytes = std::size_t{16} << 20;
constexpr std::size_t kMaxPemFileBytes = std::size_t{4} << 20;
constexpr std::size_t kMaxNamespaceFileBytes = 4096;

constexpr std::string_view kExecV1 = "client.authentication.k8s.io/v1";
constexpr std::string_view kExecV1beta1 = "client.authentication.k8s.io/v1beta1";

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

bool IsMissing(const std::string& file) {
  std::error_code ec;  // any other error: let the read report it
  return fs::status(file, ec).type() == fs::file_type::not_found;
}

// Every kubeconfig error starts by naming the file (or the merged files).
[[noreturn]] void FailIn(const std::string& files, std::string_view message) {
  throw ConfigError("kubeconfig " + files + ": " + std::string(message));
}

// One kubeconfig file: its name as given (for messages) and its folder, against which relative
// paths inside it are resolved (as kubectl resolves them).
struct Source {
  std::string file;
  fs::path dir;
};

// A node of a kubeconfig document with its path from the root (e.g. clusters[0].cluster.server),
// so that every error names the file and the field. Reading checks the node's type, so a wrong
// type is reported by name rather than escaping as a yaml-cpp exception. Absent and null nodes
// read as empty, as they do for kubectl.
class Field {
 public:
  Field(const YAML::Node& node, std::string path, std::shared_ptr<const Source> source)
      : node_(node), path_(std::move(path)), source_(std::move(source)) {}

  bool present() const { return node_.IsDefined() && !node_.IsNull(); }
  const std::string& path() const { return path_; }
  const Source& source() const { return *source_; }

  // The member `key` of this map (absent when this is absent).
  Field operator[](const std::string& key) const {
    std::string child = path_.empty() ? key : path_ + "." + key;
    if (!present()) return {YAML::Node(), std::move(child), source_};
    if (!node_.IsMap()) Fail("expected a map, found " + Describe());
    const YAML::Node& node = node_;  // the const operator[] does not insert the key
    return {node[key], std::move(child), source_};
  }

  // The items of this list (none when this is absent).
  std::vector<Field> Items() const {
    std::vector<Field> items;
    if (!present()) return items;
    if (!node_.IsSequence()) Fail("expected a list, found " + Describe());
    for (const YAML::Node& item : node_) {
      items.emplace_back(item, path_ + "[" + std::to_string(items.size()) + "]", source_);
    }
    return items;
  }

  std::string String() const {
    if (!present()) return {};
    if (!node_.IsScalar()) Fail("expected a string, found " + Describe());
    return node_.Scalar();
  }

  bool Bool() const {
    bool value = false;
    if (!present()) return value;
    if (!node_.IsScalar() || !YAML::convert<bool>::decode(node_, value)) {
      Fail("expected true or false, found " + Describe());
    }
    return value;
  }

  // A file named by this field, relative to the kubeconfig's folder unless absolute; "" if absent.
  std::string FilePath() const {
    std::string path = String();
    if (path.empty()) return path;
    return (source_->dir / path).lexically_normal().string();
  }

  // "kubeconfig FILE: PATH: what".
  [[noreturn]] void Fail(std::string_view what) const {
    Error((path_.empty() ? std::string("top level") : path_) + ": " + std::string(what));
  }
  // "kubeconfig FILE: PATH "value" what", for a value that is present but wrong.
  [[noreturn]] void FailValue(std::string_view what) const {
    Error(path_ + " " + Quoted(String()) + " " + std::string(what));
  }

 private:
  [[noreturn]] void Error(std::string_view message) const { FailIn(source_->file, message); }

  std::string Describe() const {
    if (node_.IsMap()) return "a map";
    if (node_.IsSequence()) return "a list";
    return Quoted(node_.Scalar());
  }

  YAML::Node node_;
  std::string path_;
  std::shared_ptr<const Source> source_;
};

// Named entries of one kind (clusters, users or contexts): name -> body (e.g. clusters[2].cluster).
using Entries = std::map<std::string, Field>;

// The merge of one or more kubeconfig files.
struct Kubeconfig {
  std::vector<std::string> files;  // those read
  Entries clusters;
  Entries users;
  Entries contexts;
  std::string current_context;
};

Field ReadDocument(const std::string& file) {
  std::string error;
  const std::optional<std::string> text = ReadFileLimited(file, kMaxKubeconfigBytes, &error);
  if (!text) FailIn(file, "cannot read it: " + error);
  std::error_code ec;
  const fs::path absolute = fs::absolute(file, ec);
  auto source = std::make_shared<const Source>(Source{file, absolute.parent_path()});
  try {
    return {YAML::Load(*text), "", std::move(source)};
  } catch (const YAML::Exception& e) {
    std::string where;
    if (!e.mark.is_null()) {
      where = " at line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1);
    }
    FailIn(file, "not valid YAML" + where + ": " + e.msg);
  }
}

// Adds the entries of the list `kind` ({name, <body_key>: {...}} items) that `merged` lacks: the
// first file to define a name wins, as kubectl merges. A name twice in one file is an error, as
// it is for client-go.
void MergeEntries(const Field& root, const std::string& kind, const std::string& body_key,
                  Entries* merged) {
  std::map<std::string, std::string> seen;  // name -> where in this file
  for (const Field& item : root[kind].Items()) {
    const Field name_field = item["name"];
    const std::string name = name_field.String();
    if (name.empty()) name_field.Fail("missing");
    if (const auto [it, inserted] = seen.emplace(name, item.path()); !inserted) {
      name_field.FailValue("is already defined by " + it->second);
    }
    merged->emplace(name, item[body_key]);
  }
}

void MergeFile(const std::string& file, Kubeconfig* merged) {
  const Field root = ReadDocument(file);
  MergeEntries(root, "clusters", "cluster", &merged->clusters);
  MergeEntries(root, "users", "user", &merged->users);
  MergeEntries(root, "contexts", "context", &merged->contexts);
  if (merged->current_context.empty()) merged->current_context = root["current-context"].String();
  merged->files.push_back(file);
}

bool ValidPort(std::string_view port) {
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  const int value = std::stoi(std::string(port));
  return value >= 1 && value <= 65535;
}

bool OnlyChars(std::string_view s, std::string_view allowed_punctuation) {
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           allowed_punctuation.find(c) != std::string_view::npos;
  });
}

// host[:port], where host is a DNS name, an IPv4 address or a bracketed IPv6 address (with an
// optional %zone).
bool ValidAuthority(std::string_view authority) {
  std::string_view host = authority;
  std::string_view after_host;
  bool host_ok = false;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    after_host = authority.substr(close + 1);
    host_ok = !host.empty() && OnlyChars(host, ":.%");
  } else {
    const std::size_t colon = std::min(authority.find(':'), authority.size());
    host = authority.substr(0, colon);
    after_host = authority.substr(colon);
    host_ok = !host.empty() && OnlyChars(host, "-._");
  }
  if (!host_ok) return false;
  if (after_host.empty()) return true;
  return after_host.starts_with(':') && ValidPort(after_host.substr(1));
}

// http(s)://host[:port][/prefix]. A path prefix is allowed (proxies such as Rancher's serve the
// API under one); userinfo, query and fragment are not, nor whitespace or control characters.
bool IsServerUrl(std::string_view url) {
  std::string_view rest;
  if (url.starts_with("https://")) {
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else {
    return false;
  }
  const bool clean = std::all_of(url.begin(), url.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && c != 0x7f && c != '?' && c != '#' && c != '@';
  });
  return clean && ValidAuthority(rest.substr(0, rest.find('/')));
}

std::string ServerUrl(const Field& field) {
  std::string url = field.String();
  if (url.empty()) field.Fail("missing");
  if (!IsServerUrl(url)) field.FailValue("is not an http(s) URL like https://host:6443");
  while (url.ends_with('/')) url.pop_back();
  return url;
}

// OpenSSL objects, freed on scope exit.
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

BioPtr MemoryBio(const std::string& pem) {
  return {BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free};
}

// The first certificate in `pem`, or null. Failures leave nothing in OpenSSL's per-thread error
// queue, where they would confuse the next TLS user on this thread.
X509Ptr FirstCertificate(const std::string& pem) {
  const BioPtr bio = MemoryBio(pem);
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr, &X509_free);
  ERR_clear_error();
  return cert;
}

KeyPtr PrivateKey(const std::string& pem) {
  const BioPtr bio = MemoryBio(pem);
  KeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr,
             &EVP_PKEY_free);
  ERR_clear_error();
  return key;
}

// A PEM given in a kubeconfig, and the field that gave it.
struct Pem {
  std::string text;
  Field field;
};

// `name` (a file) or `name`-data (base64), as kubeconfig gives the CA and the client certificate
// and key; nullopt when neither is given.
std::optional<Pem> ReadPem(const Field& parent, const std::string& name) {
  const Field file = parent[name];
  const Field data = parent[name + "-data"];
  const std::string path = file.FilePath();
  const std::string encoded = data.String();
  if (!path.empty() && !encoded.empty()) {
    parent.Fail("both " + name + " and " + name + "-data given; give one");
  }
  if (!encoded.empty()) {
    std::optional<std::string> decoded = Base64Decode(encoded);
    if (!decoded) data.Fail("invalid base64");
    return Pem{std::move(*decoded), data};
  }
  if (path.empty()) return std::nullopt;
  std::string error;
  std::optional<std::string> text = ReadFileLimited(path, kMaxPemFileBytes, &error);
  if (!text) file.Fail("cannot read " + path + ": " + error);
  return Pem{std::move(*text), file};
}

std::string FieldName(const Field& field) {
  return field.path().substr(field.path().rfind('.') + 1);
}

void ApplyCluster(const Field& cluster, RestConfig* config) {
  config->server = ServerUrl(cluster["server"]);
  config->tls_server_name = cluster["tls-server-name"].String();
  config->insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"].Bool();
  const std::optional<Pem> ca = ReadPem(cluster, "certificate-authority");
  if (!ca) return;
  if (config->insecure_skip_tls_verify) {
    cluster.Fail("insecure-skip-tls-verify cannot be used together with " + FieldName(ca->field) +
                 " (kubectl refuses this too); give one");
  }
  if (!FirstCertificate(ca->text)) ca->field.Fail("no PEM certificate found");
  config->ca_pem = ca->text;
}

// Both or neither, each a valid PEM, and the key must belong to the certificate: a mismatch found
// here names the fields, while the TLS handshake would only fail obscurely.
void ApplyClientCertificate(const Field& user, RestConfig* config) {
  const std::optional<Pem> cert = ReadPem(user, "client-certificate");
  const std::optional<Pem> key = ReadPem(user, "client-key");
  if (cert && !key) {
    user.Fail(FieldName(cert->field) + " given without client-key or client-key-data");
  }
  if (key && !cert) {
    user.Fail(FieldName(key->field) +
              " given without client-certificate or client-certificate-data");
  }
  if (!cert) return;
  const X509Ptr x509 = FirstCertificate(cert->text);
  if (!x509) cert->field.Fail("no PEM certificate found");
  const KeyPtr pkey = PrivateKey(key->text);
  if (!pkey) key->field.Fail("no PEM private key found");
  const bool match = X509_check_private_key(x509.get(), pkey.get()) == 1;
  ERR_clear_error();
  if (!match) {
    user.Fail(FieldName(key->field) + " does not match " + FieldName(cert->field));
  }
  config->client_cert_pem = cert->text;
  config->client_key_pem = key->text;
}

std::string ExecCommand(const Field& field) {
  const std::string command = field.String();
  if (command.empty()) field.Fail("missing");
  // As client-go: a bare name is looked up on PATH when run; a path with a slash is relative to
  // the kubeconfig's folder, which only this file knows.
  return command.find('/') == std::string::npos ? command : field.FilePath();
}

std::string InteractiveMode(const Field& field, const std::string& api_version) {
  std::string mode = field.String();
  if (mode.empty()) {
    if (api_version == kExecV1) {
      field.Fail("missing (" + std::string(kExecV1) + " requires Never, IfAvailable or Always)");
    }
    return "IfAvailable";  // v1beta1's default
  }
  if (mode != "Never" && mode != "IfAvailable" && mode != "Always") {
    field.FailValue("is not one of Never, IfAvailable, Always");
  }
  return mode;
}

ExecConfig ParseExec(const Field& exec) {
  ExecConfig out;
  const Field api_version = exec["apiVersion"];
  out.api_version = api_version.String();
  if (out.api_version.empty()) api_version.Fail("missing; use " + std::string(kExecV1));
  if (out.api_version != kExecV1 && out.api_version != kExecV1beta1) {
    api_version.FailValue("is not supported; use " + std::string(kExecV1) + " or " +
                          std::string(kExecV1beta1));
  }
  out.command = ExecCommand(exec["command"]);
  for (const Field& arg : exec["args"].Items()) out.args.push_back(arg.String());
  for (const Field& var : exec["env"].Items()) {
    const Field name = var["name"];
    if (name.String().empty()) name.Fail("missing");
    out.env.emplace_back(name.String(), var["value"].String());
  }
  out.interactive_mode = InteractiveMode(exec["interactiveMode"], out.api_version);
  out.provide_cluster_info = exec["provideClusterInfo"].Bool();
  out.install_hint = exec["installHint"].String();
  return out;
}

// Methods kubectl has and we do not; silently ignoring them would only produce puzzling 401s.
void RejectUnsupported(const Field& user) {
  if (user["auth-provider"].present()) {
    user["auth-provider"].Fail("not supported; use an exec credential plugin");
  }
  for (const char* key : {"username", "password"}) {
    if (user[key].present()) user[key].Fail("basic authentication is not supported");
  }
}

void ApplyUser(const Field& user, RestConfig* config) {
  RejectUnsupported(user);
  config->token = user["token"].String();
  if (const Field token_file = user["tokenFile"]; token_file.present()) {
    config->token_file = token_file.FilePath();
    std::string error;  // read now for a clear error; credentials.cc re-reads it as it rotates
    if (!ReadTokenFile(config->token_file, &error)) {
      token_file.Fail("cannot read " + config->token_file + ": " + error);
    }
  }
  ApplyClientCertificate(user, config);
  if (const Field exec = user["exec"]; exec.present()) config->exec = ParseExec(exec);
}

// The entry of `entries` that `ref` (a context's cluster or user) names; nullopt if it names none.
std::optional<Field> Lookup(const Entries& entries, const Field& ref, const std::string& kind) {
  const std::string name = ref.String();
  if (name.empty()) return std::nullopt;
  const auto it = entries.find(name);
  if (it == entries.end()) ref.FailValue("is not defined in " + kind);
  return it->second;
}

// Only the context in use, its cluster and its user are checked, as kubectl checks: a stale entry
// elsewhere in ~/.kube/config must not stop us.
RestConfig Resolve(const Kubeconfig& kubeconfig, const std::string& context_override) {
  const std::string files = Join(kubeconfig.files, ", ");
  const std::string name = context_override.empty() ? kubeconfig.current_context : context_override;
  if (name.empty()) FailIn(files, "no current-context set and no --context given");
  const auto it = kubeconfig.contexts.find(name);
  if (it == kubeconfig.contexts.end()) FailIn(files, "context " + Quoted(name) + " not found");
  const Field& context = it->second;

  RestConfig config;
  const std::optional<Field> cluster = Lookup(kubeconfig.clusters, context["cluster"], "clusters");
  if (!cluster) context["cluster"].Fail("missing");
  ApplyCluster(*cluster, &config);
  if (const std::optional<Field> user = Lookup(kubeconfig.users, context["user"], "users")) {
    ApplyUser(*user, &config);
  }
  if (std::string ns = context["namespace"].String(); !ns.empty()) config.ns = std::move(ns);
  config.source = context.source().file;
  return config;
}

std::optional<std::string> NonEmptyEnv(const GetEnv& env, const std::string& name) {
  std::optional<std::string> value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

[[noreturn]] void FailInCluster(std::string_view message) {
  throw ConfigError("in-cluster config: " + std::string(message));
}

std::string RequiredEnv(const GetEnv& env, const std::string& name) {
  std::optional<std::string> value = NonEmptyEnv(env, name);
  if (!value) FailInCluster(name + " is not set");
  return *value;
}

// client-go's order: $POD_NAMESPACE, the service account's namespace file, "default".
std::string InClusterNamespace(const GetEnv& env, const std::string& file) {
  if (std::optional<std::string> ns = NonEmptyEnv(env, "POD_NAMESPACE")) return *ns;
  std::string error;
  const std::optional<std::string> text = ReadFileLimited(file, kMaxNamespaceFileBytes, &error);
  const std::string_view ns = text ? TrimWhitespace(*text) : std::string_view();
  return ns.empty() ? "default" : std::string(ns);
}

}  // namespace

GetEnv ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    // Safe while nothing calls setenv concurrently, and this process never sets its environment.
    const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe)
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

RestConfig LoadKubeconfig(const std::vector<std::string>& files, const std::string& context) {
  if (files.empty()) throw ConfigError("no kubeconfig file given");
  Kubeconfig merged;
  try {
    for (const std::string& file : files) {
      // kubectl skips missing files in a list, but one named alone must exist.
      if (files.size() > 1 && IsMissing(file)) continue;
      MergeFile(file, &merged);
    }
    if (merged.files.empty()) {
      throw ConfigError("none of the kubeconfig files exists: " + Join(files, ", "));
    }
    return Resolve(merged, context);
  } catch (const YAML::Exception& e) {
    // Field checks types before reading, so this is a backstop: no yaml-cpp exception escapes.
    FailIn(Join(files, ", "), e.what());
  }
}

RestConfig InClusterConfig(const GetEnv& env, const std::string& service_account_dir) {
  const std::string host = RequiredEnv(env, "KUBERNETES_SERVICE_HOST");
  const std::string port = RequiredEnv(env, "KUBERNETES_SERVICE_PORT");
  // An IPv6 address needs brackets in a URL, as Go's net.JoinHostPort adds them.
  const bool ipv6 = host.find(':') != std::string::npos && !host.starts_with('[');
  const std::string authority = (ipv6 ? "[" + host + "]" : host) + ":" + port;
  if (!ValidAuthority(authority)) {
    FailInCluster("KUBERNETES_SERVICE_HOST " + Quoted(host) + " and KUBERNETES_SERVICE_PORT " +
                  Quoted(port) + " do not make a host:port");
  }
  RestConfig config;
  config.server = "https://" + authority;
  const fs::path dir(service_account_dir);
  config.token_file = (dir / "token").string();
  std::string error;
  if (!ReadTokenFile(config.token_file, &error)) {
    FailInCluster("service account token " + config.token_file + ": " + error);
  }
  const std::string ca_file = (dir / "ca.crt").string();
  std::optional<std::string> ca = ReadFileLimited(ca_file, kMaxPemFileBytes, &error);
  if (!ca) FailInCluster("service account CA " + ca_file + ": " + error);
  if (!FirstCertificate(*ca))
    FailInCluster("service account CA " + ca_file + ": no PEM certificate found");
  config.ca_pem = std::move(*ca);
  config.ns = InClusterNamespace(env, (dir / "namespace").string());
  config.source = "in-cluster";
  return config;
}

RestConfig LoadConfig(const LoadOptions& options) {
  if (!options.kubeconfig.empty()) return LoadKubeconfig({options.kubeconfig}, options.context);
  std::vector<std::string> tried{"--kubeconfig (not given)"};

  std::vector<std::string> listed = SplitPathList(options.env("KUBECONFIG").value_or(""));
  std::erase(listed, "");  // as kubectl, empty entries mean nothing
  if (!listed.empty()) return LoadKubeconfig(listed, options.context);
  tried.emplace_back("$KUBECONFIG (not set)");

  if (NonEmptyEnv(options.env, "KUBERNETES_SERVICE_HOST") &&
      NonEmptyEnv(options.env, "KUBERNETES_SERVICE_PORT")) {
    return InClusterConfig(options.env, options.service_account_dir);
  }
  tried.emplace_back("in-cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT not set)");

  if (const std::optional<std::string> home = NonEmptyEnv(options.env, "HOME")) {
    const std::string file = (fs::path(*home) / ".kube" / "config").string();
    if (!IsMissing(file)) return LoadKubeconfig({file}, options.context);
    tried.push_back(file + " (does not exist)");
  } else {
    tried.emplace_back("~/.kube/config ($HOME not set)");
  }
  throw ConfigError("no Kubernetes configuration found; tried " + Join(tried, ", "));
}

}  // namespace eoc::kube
