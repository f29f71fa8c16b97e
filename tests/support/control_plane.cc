#include "control_plane.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

#include "files.h"

namespace eoc::testing {

const ControlPlane* ControlPlane::Find() {
  static const ControlPlane* plane = []() -> const ControlPlane* {
    const char* env = std::getenv("EOC_KUBE_ENV");  // NOLINT(concurrency-mt-unsafe): at start-up
    if (env == nullptr || *env == '\0') return nullptr;
    std::ifstream in(env);
    if (!in) return nullptr;
    auto* p = new ControlPlane();  // lives for the process
    std::string line;
    while (std::getline(in, line)) {
      const auto eq = line.find('=');
      if (eq == std::string::npos || line[0] == '#') continue;
      std::string key = line.substr(0, eq);
      if (key.rfind("export ", 0) == 0) key = key.substr(7);
      std::string value = line.substr(eq + 1);
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
          value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
      }
      p->vars_[key] = value;
    }
    return p;
  }();
  return plane;
}

std::string ControlPlane::Var(const std::string& name) const {
  const auto it = vars_.find(name);
  return it == vars_.end() ? "" : it->second;
}

kube::RestConfig ControlPlane::TokenConfig(const std::string& token) const {
  kube::RestConfig c;
  c.server = server();
  c.ca_pem = ReadFile(Var("EOC_KUBE_CA"));
  c.token = token;
  c.source = "test control plane";
  return c;
}

kube::RestConfig ControlPlane::AdminConfig() const {
  return TokenConfig(Var("EOC_KUBE_ADMIN_TOKEN"));
}

kube::RestConfig ControlPlane::CertConfig() const {
  kube::RestConfig c = TokenConfig("");
  c.client_cert_pem = ReadFile(Var("EOC_KUBE_ADMIN_CERT"));
  c.client_key_pem = ReadFile(Var("EOC_KUBE_ADMIN_KEY"));
  return c;
}

std::string UniqueName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

}  // namespace eoc::testing
