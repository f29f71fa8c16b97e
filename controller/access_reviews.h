// The pick endpoint's and /metrics' Reviewer in production: TokenReviews and
// SubjectAccessReviews asked of the API server (authentication.k8s.io/v1,
// authorization.k8s.io/v1), as the kubelet and controller-runtime's metrics filter ask them.
//
//   eoc::controller::KubeReviewer reviewer(client);
//   eoc::server::AccessControl access(reviewer, eoc::RealClock(), {});
//
// The operator's ClusterRole must allow `create` on tokenreviews and subjectaccessreviews. An
// answer the API server does not give (down, throttled, or the role missing: logged, with the
// status but never the token) is kUnavailable. The user a TokenReview names is bounded (its
// name, groups and extra, as kMax* below); one past the bounds is refused as not valid.
#pragma once

#include <cstddef>
#include <string>

#include "kube/client.h"
#include "server/access.h"
#include "telemetry/logging.h"

namespace eoc::controller {

class KubeReviewer final : public server::Reviewer {
 public:
  static constexpr std::size_t kMaxNameBytes = 1024;  // a username, uid, group, extra key or value
  static constexpr std::size_t kMaxGroups = 256;
  static constexpr std::size_t kMaxExtraKeys = 32;
  static constexpr std::size_t kMaxExtraValues = 32;  // per key

  // `client` must outlive the reviewer.
  explicit KubeReviewer(kube::Client& client) : client_(client) {}

  TokenAnswer ReviewToken(const std::string& token) override;
  Outcome ReviewAccess(const server::UserInfo& user, const server::AccessRequest& request) override;

 private:
  kube::Client& client_;
  const telemetry::Logger log_{"access-reviews"};
};

}  // namespace eoc::controller
