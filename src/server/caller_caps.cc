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

const CallerCaps::Keys& CallerCaps::ThreadKeysOf(const Key& key) {
  // Built on every pick, in this thread's buffers: a warm one allocates nothing.
  thread_local Keys keys;
  PoolKeyOf(key, keys.pool);
  CallerKeyOf(key, keys.caller);
  UserKeyOf(key, keys.user);
  return keys;
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
  const Keys& keys = ThreadKeysOf(key);
  const std::lock_guard lock(mu_);
  const std::size_t in_pool = WaitingLocked(keys.pool);
  const std::size_t of_caller = caller ? WaitingLocked(keys.caller) : 0;
  const std::size_t of_user = user ? WaitingLocked(keys.user) : 0;
  if (caller_waiting && of_caller >= options_.max_waiting_per_caller) {
    verdict.waiting = Cap::kCaller;
  } else if (user_waiting && of_user >= options_.max_waiting_per_user) {
    verdict.waiting = Cap::kUser;
  }
  // Work-conserving: a share binds only while others' picks wait (the pool's, or the caller's
  // other end users').
  if (caller_share && in_pool > of_caller &&
      OverLocked(keys.caller, now, reservation.window, verdict.retry_after)) {
    verdict.share = Cap::kCaller;
  } else if (user_share && (caller ? of_caller : in_pool) > of_user &&
             OverLocked(keys.user, now, reservation.window, verdict.retry_after)) {
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
  const Keys& keys = ThreadKeysOf(key);
  const auto capacity = static_cast<double>(reservation.capacity_tokens);
  const std::lock_guard lock(mu_);
  if (caller) MeterLocked(keys.caller, options_.max_reserved_share * capacity, reservation, now);
  if (user) {
    MeterLocked(keys.user, options_.max_reserved_share_per_user * capacity, reservation, now);
  }
}

std::size_t CallerCaps::Meters() const {
  const std::lock_guard lock(mu_);
  return paid_until_.size();
}

std::shared_ptr<CallerCaps::Place> CallerCaps::Take(const Key& key) {
  const Keys& keys = ThreadKeysOf(key);
  {
    const std::lock_guard lock(mu_);
    ++waiting_[keys.pool];
    if (!keys.caller.empty()) ++waiting_[keys.caller];
    if (!keys.user.empty()) ++waiting_[keys.user];
  }
  return std::make_shared<Place>(*this, keys.pool, keys.caller, keys.user);
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
