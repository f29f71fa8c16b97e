#include "server/caller_caps.h"

#include <algorithm>
#include <utility>

namespace eoc::server {
namespace {

// Separates a key's parts: no identity key, pool key or header value holds it (a header value
// cannot hold control characters; identity keys use \x1f between their own parts).
constexpr char kSep = '\x1e';

// A burst weighs on its caller for at most this many reservation windows.
constexpr int kMaxDebtWindows = 4;
// A full meter table is cleared of paid-off keys at most this often.
constexpr std::chrono::seconds kSweepEvery{1};

}  // namespace

void CallerCaps::PoolKeyOf(const Key& key, std::string& out) {
  out.clear();
  out.append(1, kSep).append(key.pool);
}

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

std::size_t CallerCaps::WaitingLocked(const std::string& key) const {
  const auto it = waiting_.find(key);
  return it == waiting_.end() ? 0 : it->second;
}

bool CallerCaps::OverLocked(const std::string& key, TimePoint now, std::chrono::nanoseconds window,
                            std::chrono::nanoseconds& retry_after) const {
  const auto it = paid_until_.find(key);
  if (it == paid_until_.end() || it->second - now < window) return false;
  retry_after = std::max(it->second - window - now, std::chrono::nanoseconds(1));
  return true;
}

CallerCaps::Verdict CallerCaps::Check(const Key& key, const Reservation& reservation,
                                      TimePoint now) const {
  const bool caller = !key.caller.empty();
  const bool user = !key.user.empty();
  const bool metered = reservation.capacity_tokens > 0 && reservation.window.count() > 0;
  const bool caller_share = caller && metered && options_.max_reserved_share > 0;
  const bool user_share = user && metered && options_.max_reserved_share_per_user > 0;
  const bool caller_waiting = caller && options_.max_waiting_per_caller > 0;
  const bool user_waiting = user && options_.max_waiting_per_user > 0;
  Verdict verdict;
  if (!caller_share && !user_share && !caller_waiting && !user_waiting) return verdict;
  // Read on every pick: the keys are built in this thread's buffers, so a warm one allocates
  // nothing.
  thread_local std::string pool_key;
  thread_local std::string caller_key;
  thread_local std::string user_key;
  PoolKeyOf(key, pool_key);
  CallerKeyOf(key, caller_key);
  UserKeyOf(key, user_key);
  const std::lock_guard lock(mu_);
  const std::size_t in_pool = WaitingLocked(pool_key);
  const std::size_t of_caller = caller ? WaitingLocked(caller_key) : 0;
  const std::size_t of_user = user ? WaitingLocked(user_key) : 0;
  if (caller_waiting && of_caller >= options_.max_waiting_per_caller) {
    verdict.waiting = Cap::kCaller;
  } else if (user_waiting && of_user >= options_.max_waiting_per_user) {
    verdict.waiting = Cap::kUser;
  }
  // Work-conserving: a share binds only while others' picks wait (the pool's, or the caller's
  // other end users').
  if (caller_share && in_pool > of_caller &&
      OverLocked(caller_key, now, reservation.window, verdict.retry_after)) {
    verdict.share = Cap::kCaller;
  } else if (user_share && (caller ? of_caller : in_pool) > of_user &&
             OverLocked(user_key, now, reservation.window, verdict.retry_after)) {
    verdict.share = Cap::kUser;
  }
  return verdict;
}

void CallerCaps::MeterLocked(const std::string& key, double limit, const Reservation& reservation,
                             TimePoint now) {
  auto it = paid_until_.find(key);
  if (it == paid_until_.end()) {
    if (paid_until_.size() >= kMaxMeters && now - last_sweep_ >= kSweepEvery) {
      last_sweep_ = now;
      std::erase_if(paid_until_, [now](const auto& entry) { return entry.second <= now; });
    }
    if (paid_until_.size() >= kMaxMeters) return;  // not metered until room comes back
    it = paid_until_.emplace(key, now).first;
  }
  // The debt of `tokens` at `limit` tokens per window, as a duration; at most kMaxDebtWindows
  // windows are owed in all.
  const auto window = static_cast<double>(reservation.window.count());
  const auto debt = std::chrono::nanoseconds(static_cast<std::int64_t>(std::min(
      window * static_cast<double>(reservation.tokens) / limit, window * kMaxDebtWindows)));
  it->second =
      std::min(std::max(it->second, now) + debt, now + kMaxDebtWindows * reservation.window);
}

void CallerCaps::Charge(const Key& key, const Reservation& reservation, TimePoint now) {
  if (reservation.capacity_tokens <= 0 || reservation.window.count() <= 0 ||
      reservation.tokens <= 0) {
    return;
  }
  const bool caller = !key.caller.empty() && options_.max_reserved_share > 0;
  const bool user = !key.user.empty() && options_.max_reserved_share_per_user > 0;
  if (!caller && !user) return;
  thread_local std::string caller_key;
  thread_local std::string user_key;
  CallerKeyOf(key, caller_key);
  UserKeyOf(key, user_key);
  const auto capacity = static_cast<double>(reservation.capacity_tokens);
  const std::lock_guard lock(mu_);
  if (caller) MeterLocked(caller_key, options_.max_reserved_share * capacity, reservation, now);
  if (user) {
    MeterLocked(user_key, options_.max_reserved_share_per_user * capacity, reservation, now);
  }
}

std::size_t CallerCaps::Meters() const {
  const std::lock_guard lock(mu_);
  return paid_until_.size();
}

std::shared_ptr<CallerCaps::Place> CallerCaps::Take(const Key& key) {
  std::string pool;
  std::string caller;
  std::string user;
  PoolKeyOf(key, pool);
  CallerKeyOf(key, caller);
  UserKeyOf(key, user);
  {
    const std::lock_guard lock(mu_);
    ++waiting_[pool];
    if (!caller.empty()) ++waiting_[caller];
    if (!user.empty()) ++waiting_[user];
  }
  return std::make_shared<Place>(*this, std::move(pool), std::move(caller), std::move(user));
}

std::size_t CallerCaps::Waiting(const Key& key) const {
  std::string k;
  if (key.user.empty()) {
    CallerKeyOf(key, k);
  } else {
    UserKeyOf(key, k);
  }
  const std::lock_guard lock(mu_);
  return WaitingLocked(k);
}

void CallerCaps::Release(const std::string& key) {
  if (key.empty()) return;
  const std::lock_guard lock(mu_);
  const auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  if (--it->second == 0) waiting_.erase(it);
}

CallerCaps::Place::Place(CallerCaps& caps, std::string pool_key, std::string caller_key,
                         std::string user_key)
    : caps_(caps),
      pool_key_(std::move(pool_key)),
      caller_key_(std::move(caller_key)),
      user_key_(std::move(user_key)) {}

void CallerCaps::Place::GiveBack() {
  std::call_once(given_back_, [this] {
    caps_.Release(pool_key_);
    caps_.Release(caller_key_);
    caps_.Release(user_key_);
  });
}

}  // namespace eoc::server
