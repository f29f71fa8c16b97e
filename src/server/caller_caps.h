// What one caller may hold in one pool at once: its picks waiting in the pool's queue, and those of
// each end user it speaks for. Behind a gateway every pick carries the gateway's identity, so a cap
// per identity alone would throttle the gateway; the gateway passes each request's end user as a
// fairness key (the x-eoc-fairness-key header its recipe sets from the client's identity), and
// each end user then has a cap of its own within the caller's. The key only divides the caller's
// own share: a caller that varies it gets no more than the caller's cap.
//
//   eoc::server::CallerCaps caps({.max_waiting_per_caller = 512, .max_waiting_per_user = 64});
//   const auto key = eoc::server::CallerCaps::Key{.caller = "u:alice", .pool = "ns/chat",
//                                                 .user = "client-42"};
//   if (caps.Full(key)) { ...answer 429... }
//   auto place = caps.Take(key);   // when the pick is deferred; given back when it ends
//
// Waiting picks each hold a connection, so these caps bound a caller's connections too. Every
// count is for this replica. Thread-safe; the table holds only keys with picks waiting, so it is
// bounded by the picks waiting on the replica (--pick-max-waiting).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace eoc::server {

class CallerCaps {
 public:
  struct Options {
    // A caller's waiting picks in one pool (0: no cap). Applied only to callers access control
    // named: without it every pick is one anonymous caller, bound by the pool's maxQueue alone.
    std::size_t max_waiting_per_caller = 512;
    // Those of one end user (fairness key) of a caller in one pool (0: no cap).
    std::size_t max_waiting_per_user = 64;
  };

  // A fairness key longer than this is refused (400).
  static constexpr std::size_t kMaxUserBytes = 256;

  struct Key {
    std::string_view caller;  // the identity's key; empty: anonymous (no caller cap)
    std::string_view pool;    // "namespace/name"
    std::string_view user;    // the fairness key; empty: none
  };

  // Which cap a pick would pass.
  enum class Cap : std::uint8_t { kNone, kCaller, kUser };

  // A waiting pick's places, given back once (by GiveBack or the destructor).
  class Place {
   public:
    Place(CallerCaps& caps, std::string caller_key, std::string user_key);
    ~Place() { GiveBack(); }
    Place(const Place&) = delete;
    Place& operator=(const Place&) = delete;
    Place(Place&&) = delete;
    Place& operator=(Place&&) = delete;
    void GiveBack();

   private:
    CallerCaps& caps_;
    std::string caller_key_;  // empty when not counted
    std::string user_key_;
    std::once_flag given_back_;
  };

  explicit CallerCaps(Options options) : options_(options) {}

  const Options& options() const { return options_; }
  // The cap a new waiting pick of `key` would pass, read now (a pick deferred on another thread
  // at the same moment may pass it by one).
  Cap Full(const Key& key) const;
  // Counts a waiting pick of `key` until its Place is given back.
  std::shared_ptr<Place> Take(const Key& key);
  // Picks of `key` counted now, for tests.
  std::size_t Waiting(const Key& key) const;

 private:
  void Release(const std::string& key);
  // The table's keys of `key` into `out` ("" when that cap does not count it).
  static void CallerKeyOf(const Key& key, std::string& out);
  static void UserKeyOf(const Key& key, std::string& out);

  const Options options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::size_t> waiting_;  // guarded by mu_; no zero counts
};

}  // namespace eoc::server
