#include "server/caller_caps.h"

#include <utility>

namespace eoc::server {
namespace {

// Separates a key's parts: no identity key, pool key or header value holds it (a header value
// cannot hold control characters; identity keys use \x1f between their own parts).
constexpr char kSep = '\x1e';

}  // namespace

void CallerCaps::CallerKeyOf(const Key& key, std::string& out) {
  out.clear();
  if (!key.caller.empty()) out.append(key.caller).append(1, kSep).append(key.pool);
}

void CallerCaps::UserKeyOf(const Key& key, std::string& out) {
  out.clear();
  if (!key.user.empty()) {
    out.append(key.caller).append(1, kSep).append(key.pool).append(1, kSep).append(key.user);
  }
}

CallerCaps::Cap CallerCaps::Full(const Key& key) const {
  const bool caller = !key.caller.empty() && options_.max_waiting_per_caller > 0;
  const bool user = !key.user.empty() && options_.max_waiting_per_user > 0;
  if (!caller && !user) return Cap::kNone;
  // Read on every pick: the keys are built in this thread's buffers, so a warm one allocates
  // nothing.
  thread_local std::string caller_key;
  thread_local std::string user_key;
  CallerKeyOf(key, caller_key);
  UserKeyOf(key, user_key);
  const std::lock_guard lock(mu_);
  const auto count = [this](const std::string& k) {
    const auto it = waiting_.find(k);
    return it == waiting_.end() ? std::size_t{0} : it->second;
  };
  if (caller && count(caller_key) >= options_.max_waiting_per_caller) return Cap::kCaller;
  if (user && count(user_key) >= options_.max_waiting_per_user) return Cap::kUser;
  return Cap::kNone;
}

std::shared_ptr<CallerCaps::Place> CallerCaps::Take(const Key& key) {
  std::string caller;
  std::string user;
  CallerKeyOf(key, caller);
  UserKeyOf(key, user);
  {
    const std::lock_guard lock(mu_);
    if (!caller.empty()) ++waiting_[caller];
    if (!user.empty()) ++waiting_[user];
  }
  return std::make_shared<Place>(*this, std::move(caller), std::move(user));
}

std::size_t CallerCaps::Waiting(const Key& key) const {
  std::string k;
  if (key.user.empty()) {
    CallerKeyOf(key, k);
  } else {
    UserKeyOf(key, k);
  }
  const std::lock_guard lock(mu_);
  const auto it = waiting_.find(k);
  return it == waiting_.end() ? 0 : it->second;
}

void CallerCaps::Release(const std::string& key) {
  if (key.empty()) return;
  const std::lock_guard lock(mu_);
  const auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  if (--it->second == 0) waiting_.erase(it);
}

CallerCaps::Place::Place(CallerCaps& caps, std::string caller_key, std::string user_key)
    : caps_(caps), caller_key_(std::move(caller_key)), user_key_(std::move(user_key)) {}

void CallerCaps::Place::GiveBack() {
  std::call_once(given_back_, [this] {
    caps_.Release(caller_key_);
    caps_.Release(user_key_);
  });
}

}  // namespace eoc::server
