#include "kube/kubeconfig_user.h"

#include <string_view>

#include "kube/tls_material.h"
#include "kube/token_file.h"

namespace eoc::kube::kubeconfig {
namespace {

constexpr std::string_view kExecV1 = "client.authentication.k8s.io/v1";
constexpr std::string_view kExecV1beta1 = "client.authentication.k8s.io/v1beta1";

// Both or neither, each a valid PEM, and the key must belong to the certificate: a mismatch found
// here names the fields, while the TLS handshake would only fail obscurely.
void ApplyClientCertificate(const Field& user, RestConfig* config) {
  const std::optional<Pem> cert = ReadPem(user, "client-certificate");
  const std::optional<Pem> key = ReadPem(user, "client-key");
  if (cert && !key) {
    user.Fail(cert->field.name() + " given without client-key or client-key-data");
  }
  if (key && !cert) {
    user.Fail(key->field.name() + " given without client-certificate or client-certificate-data");
  }
  if (!cert) return;
  switch (CheckKeyPair(cert->text, key->text)) {
    case KeyPairCheck::kOk:
      break;
    case KeyPairCheck::kNoCertificate:
      cert->field.Fail("no PEM certificate found");
    case KeyPairCheck::kNoPrivateKey:
      key->field.Fail("no PEM private key found");
    case KeyPairCheck::kMismatch:
      user.Fail(key->field.name() + " does not match " + cert->field.name());
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

// Methods kubectl has and we do not.
void RejectUnsupported(const Field& user) {
  if (user["auth-provider"].present()) {
    user["auth-provider"].Fail("not supported; use an exec credential plugin");
  }
  for (const char* key : {"username", "password"}) {
    if (user[key].present()) user[key].Fail("basic authentication is not supported");
  }
}

}  // namespace

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

}  // namespace eoc::kube::kubeconfig
