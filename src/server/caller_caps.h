// What one caller may hold in one pool: its picks waiting in the pool's queue, and its share of the
// pool's KV cache reserved by its picks; and the same for each end user it speaks for. Behind a
// gateway every pick carries the gateway's identity, so a cap per identity alone would throttle
// the gateway; the gateway passes each request's end user as a fairness key (the
// x-eoc-fairness-key header its recipe sets from the client's identity), and each end user then
// has caps of its own within the caller's. The key only divides the caller's own share: a caller
// that varies it gets no more than the caller's caps.
//
//   eoc::server::CallerCaps caps({});   // the defaults below
//   const auto key = eoc::server::CallerCaps::Key{.caller = "u:alice", .pool = "ns/chat",
//                                                 .user = "client-42"};
//   const auto verdict = caps.Check(key, pool.ReservationOf(request), now);
//   if (verdict.share != Cap::kNone) { ...answer 429 now... }
//   ...pick, refusing to wait when verdict.waiting != Cap::kNone...
//   caps.Charge(key, pool.ReservationOf(request), now);   // once the pick is placed or waits
//   auto place = caps.Take(key);   // when the pick is deferred; given back when it ends
//
// Waiting picks each hold a connection, so the waiting caps bound a caller's connections too.
//
// The reserved share. A pick reserves KV blocks on its worker until that worker's next scrape, so
// a caller that picks without sending the requests (or sends requests far smaller than it said)
// makes the pool look full: others' picks wait, and waiting picks are demand the autoscaler
// scales on. Each caller's picks in a pool are metered in tokens (prompt plus expected, as the
// pool counts them) against `max_reserved_share` of the pool's KV cache per reservation window
// (one scrape interval): a generic cell rate, the meter's debt paid off at that rate, so what a
// caller reserved in a burst weighs on it for as long as it would have held the pool. The cap is
// work-conserving: a caller over its share is refused (429) only while picks of other callers
// wait in the pool, so one gateway alone can use the whole pool, and a caller that fills it cannot
// keep others waiting. End users (fairness keys) likewise, within their caller, against
// `max_reserved_share_per_user`, while other end users' picks (or, without a caller, other
// picks) wait. A pool whose workers report no KV cache has no reservations and no share cap.
//
// Every count is for this replica. Thread-safe. The waiting table holds only keys with picks
// waiting, so it is bounded by the picks waiting on the replica (--pick-max-waiting); the meters
// hold at most kMaxMeters keys with debt (paid-off ones are dropped): past that, a new caller or
// end user is not metered until room comes back (a caller's own meter still bounds an end user).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "routing/pool_state.h"

namespace eoc::server {

class CallerCaps {
 public:
  struct Options {
    // A caller's waiting picks in one pool (0: no cap). Applied only to callers access control
    // named: without it every pick is one anonymous caller, bound by the pool's maxQueue alone.
    std::size_t max_waiting_per_caller = 512;
    // Those of one end user (fairness key) of a caller in one pool (0: no cap).
    std::size_t max_waiting_per_user = 64;
    // The share of a pool's KV cache a caller's picks may reserve per reservation window while
    // other callers' picks wait in the pool (0: no cap). Applied only to callers access control
    // named.
    double max_reserved_share = 0.5;
    // That of one end user within its caller, while other end users' picks wait (0: no cap).
    double max_reserved_share_per_user = 0.25;
  };

  // Keys metered at once, at most; a new key past this is not metered until debts are paid off.
  static constexpr std::size_t kMaxMeters = 65'536;

  // A fairness key longer than this is refused (400).
  static constexpr std::size_t kMaxUserBytes = 256;

  struct Key {
    std::string_view caller;  // the identity's key; empty: anonymous (no caller cap)
    std::string_view pool;    // "namespace/name"
    std::string_view user;    // the fairness key; empty: none
  };

  // Which cap a pick would pass: the caller's, or its end user's.
  enum class Cap : std::uint8_t { kNone, kCaller, kUser };

  using TimePoint = std::chrono::steady_clock::time_point;
  using Reservation = routing::PoolState::Reservation;

  struct Verdict {
    // A waiting cap the pick would pass were it to wait: it may be placed now, not queued.
    Cap waiting = Cap::kNone;
    // A share cap it is over while others wait: refused now, whether or not there is room.
    Cap share = Cap::kNone;
    // When `share`: until its meter is back under the share (at least 1 ns).
    std::chrono::nanoseconds retry_after{};
  };

  // A waiting pick's places, given back once (by GiveBack or the destructor).
  class Place {
   public:
    Place(CallerCaps& caps, std::string pool_key, std::string caller_key, std::string user_key);
    ~Place() { GiveBack(); }
    Place(const Place&) = delete;
    Place& operator=(const Place&) = delete;
    Place(Place&&) = delete;
    Place& operator=(Place&&) = delete;
    void GiveBack();

   private:
    CallerCaps& caps_;
    std::string pool_key_;
    std::string caller_key_;  // empty when not counted
    std::string user_key_;
    std::once_flag given_back_;
  };

  explicit CallerCaps(Options options) : options_(options) {}

  const Options& options() const { return options_; }
  // The caps a new pick of `key` reserving `reservation` would pass, read now (a pick decided on
  // another thread at the same moment may pass them by one).
  Verdict Check(const Key& key, const Reservation& reservation, TimePoint now) const;
  // Meters a pick of `key` that was placed or is waiting (its reservation is, or will be, held).
  void Charge(const Key& key, const Reservation& reservation, TimePoint now);
  // Counts a waiting pick of `key` until its Place is given back.
  std::shared_ptr<Place> Take(const Key& key);
  // Picks of `key` counted now, for tests.
  std::size_t Waiting(const Key& key) const;
  // Keys metered now, for tests.
  std::size_t Meters() const;

 private:
  void Release(const std::string& key);
  // The tables' keys of `key` into `out` ("" when that cap does not count it): the pool's (every
  // pick, for "others wait"), the caller's and the end user's.
  static void PoolKeyOf(const Key& key, std::string& out);
  static void CallerKeyOf(const Key& key, std::string& out);
  static void UserKeyOf(const Key& key, std::string& out);
  // All three of `key`, in this thread's buffers (valid until its next call on this thread).
  struct Keys {
    std::string pool;
    std::string caller;
    std::string user;
  };
  static const Keys& ThreadKeysOf(const Key& key);
  std::size_t WaitingLocked(const std::string& key) const;
  // Whether `key`'s meter is over a share of `limit` tokens per window, and until when.
  bool OverLocked(const std::string& key, TimePoint now, std::chrono::nanoseconds window,
                  std::chrono::nanoseconds& retry_after) const;
  void MeterLocked(const std::string& key, double limit, const Reservation& reservation,
                   TimePoint now);

  const Options options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::size_t> waiting_;  // guarded by mu_; no zero counts
  // Each metered key's debt: when what it reserved is paid off. Guarded by mu_.
  std::unordered_map<std::string, TimePoint> paid_until_;
  TimePoint last_sweep_;  // when paid_until_ was last cleared of paid-off keys; under mu_
};

}  // namespace eoc::server
