// The one fake of server::Reviewer: Kubernetes' reviews as a test sets them (valid tokens,
// allowed requests as "user|verb|namespace-or-path", an outage), with a hold that keeps reviews
// running until released, and every review asked, in order.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/access.h"

namespace eoc::testing {

class FakeReviewer final : public server::Reviewer {
 public:
  TokenAnswer ReviewToken(const std::string& token) override {
    std::unique_lock lock(mu_);
    asked_.push_back("token:" + token);
    released_.wait(lock, [this] { return !hold_; });
    if (unavailable_) return {};
    const auto it = tokens_.find(token);
    if (it == tokens_.end()) return {.outcome = Outcome::kNo};
    return {.outcome = Outcome::kYes, .user = it->second};
  }
  Outcome ReviewAccess(const server::UserInfo& user,
                       const server::AccessRequest& request) override {
    std::unique_lock lock(mu_);
    const std::string key = user.username + "|" + std::string(request.verb) + "|" +
                            std::string(request.path.empty() ? request.ns : request.path);
    std::string groups;
    for (const auto& g : user.groups) groups += "," + g;
    asked_.push_back("access:" + key + groups);
    released_.wait(lock, [this] { return !hold_; });
    if (unavailable_) return Outcome::kUnavailable;
    return allowed_.contains(key) ? Outcome::kYes : Outcome::kNo;
  }

  void AddToken(const std::string& token, const std::string& user,
                std::vector<std::string> groups = {}) {
    const std::lock_guard lock(mu_);
    tokens_[token] = {.username = user, .uid = "uid-" + user, .groups = std::move(groups)};
  }
  void Allow(const std::string& key) {
    const std::lock_guard lock(mu_);
    allowed_.insert(key);
  }
  void Revoke(const std::string& key) {
    const std::lock_guard lock(mu_);
    allowed_.erase(key);
  }
  void SetUnavailable(bool unavailable) {
    const std::lock_guard lock(mu_);
    unavailable_ = unavailable;
  }
  void Hold(bool hold) {
    {
      const std::lock_guard lock(mu_);
      hold_ = hold;
    }
    released_.notify_all();
  }
  std::vector<std::string> Asked() const {
    const std::lock_guard lock(mu_);
    return asked_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable released_;
  std::map<std::string, server::UserInfo> tokens_;
  std::set<std::string> allowed_;
  bool unavailable_ = false;
  bool hold_ = false;
  std::vector<std::string> asked_;
};

}  // namespace eoc::testing
