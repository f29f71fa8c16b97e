#include "kube/credentials.h"

#include <utility>

#include "kube/exec_plugin.h"
#include "kube/token_file.h"

namespace eoc::kube {
namespace {

// An exec credential is fetched anew this long before it expires, so that a request never
// leaves with a token that lapses on its way (client-go keeps a similar margin).
constexpr std::chrono::seconds kExpiryMargin{10};

class StaticSource final : public CredentialSource {
 public:
  explicit StaticSource(Credentials credentials) : credentials_(std::move(credentials)) {}
  Credentials Get() override { return credentials_; }
  void Invalidate() override {}  // nothing to fetch anew: a 401 stays a 401

 private:
  const Credentials credentials_;
};

// A bearer token file, re-read every kTokenFileRereadPeriod and after Invalidate(), since
// kubelet rotates bound service-account tokens in place.
class TokenFileSource final : public CredentialSource {
 public:
  TokenFileSource(std::string path, Credentials base, const Clock& clock)
      : path_(std::move(path)), clock_(clock), base_(std::move(base)) {}

  Credentials Get() override {
    const std::lock_guard lock(mu_);
    if (base_.token.empty() || stale_ || clock_.Now() - read_at_ >= kTokenFileRereadPeriod) {
      Reread();
    }
    return base_;
  }

  void Invalidate() override {
    const std::lock_guard lock(mu_);
    stale_ = true;
  }

 private:
  void Reread() {
    std::string error;
    std::optional<std::string> token = ReadTokenFile(path_, &error);
    read_at_ = clock_.Now();
    stale_ = false;
    if (token) {
      base_.token = std::move(*token);
      return;
    }
    // Keep a token we have: a rotation in progress can leave the file briefly missing or empty,
    // and the old token is normally still good. The next period tries again.
    if (base_.token.empty()) throw CredentialError("token file " + path_ + ": " + error);
  }

  const std::string path_;
  const Clock& clock_;
  std::mutex mu_;
  Credentials base_;  // guarded by mu_; .token is the last token read, "" before the first
  std::chrono::steady_clock::time_point read_at_;  // guarded by mu_
  bool stale_ = false;                             // guarded by mu_
};

// An exec credential plugin's answer, cached until it nears its expiry or Invalidate() is called.
class ExecSource final : public CredentialSource {
 public:
  ExecSource(ExecConfig exec, ExecClusterInfo cluster, Credentials base, const Clock& clock)
      : exec_(std::move(exec)),
        cluster_(std::move(cluster)),
        base_(std::move(base)),
        clock_(clock) {}

  Credentials Get() override {
    if (std::optional<Credentials> cached = Cached()) return *cached;
    // One run at a time: callers that queue here while a run is under way get its result.
    const std::lock_guard run_lock(run_mu_);
    if (std::optional<Credentials> cached = Cached()) return *cached;
    const ExecResult result = RunExecPlugin(exec_, cluster_);
    Credentials credentials = base_;
    if (!result.token.empty()) credentials.token = result.token;
    if (!result.client_cert_pem.empty()) {
      credentials.client_cert_pem = result.client_cert_pem;
      credentials.client_key_pem = result.client_key_pem;
    }
    const std::lock_guard lock(mu_);
    // Kept even if Invalidate() came during the run: it was about the previous credentials.
    cached_ = credentials;
    expiry_ = result.expiry;
    return credentials;
  }

  void Invalidate() override {
    const std::lock_guard lock(mu_);  // never waits for a plugin run: that holds run_mu_ only
    cached_.reset();
  }

 private:
  std::optional<Credentials> Cached() const {
    const std::lock_guard lock(mu_);
    if (cached_ && expiry_ && clock_.WallNow() + kExpiryMargin >= *expiry_) return std::nullopt;
    return cached_;
  }

  const ExecConfig exec_;
  const ExecClusterInfo cluster_;
  const Credentials base_;  // the kubeconfig's static credentials, where the plugin gives none
  const Clock& clock_;
  std::mutex run_mu_;
  mutable std::mutex mu_;
  std::optional<Credentials> cached_;                            // guarded by mu_
  std::optional<std::chrono::system_clock::time_point> expiry_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<CredentialSource> MakeCredentialSource(const RestConfig& config,
                                                       const Clock& clock) {
  Credentials base{config.token, config.client_cert_pem, config.client_key_pem};
  if (config.exec) {
    ExecClusterInfo cluster{config.server, config.tls_server_name, config.ca_pem,
                            config.insecure_skip_tls_verify};
    return std::make_unique<ExecSource>(*config.exec, std::move(cluster), std::move(base), clock);
  }
  if (!config.token_file.empty()) {
    // The file wins over a static token, as in client-go.
    base.token.clear();
    return std::make_unique<TokenFileSource>(config.token_file, std::move(base), clock);
  }
  return std::make_unique<StaticSource>(std::move(base));
}

}  // namespace eoc::kube
