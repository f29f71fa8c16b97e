// Who may call the pick endpoint and /metrics: callers identified and authorised by Kubernetes,
// with the answers cached so that a pick from a known caller waits on nothing.
//
// A caller is who its bearer token says (a TokenReview tells), or else who its verified client
// certificate says: the user is Options::cert_prefix + the subject's CN, the groups
// cert_prefix + each O, and a certificate whose CN or any O begins with "system:" is refused (no
// certificate may claim system:masters). What it may do is what a SubjectAccessReview answers:
// for picks a verb on the `inferencepools/pick` subresource of group eoc.dev in the pool's
// namespace, for /metrics `get` on the non-resource URL.
//
//   eoc::server::AccessControl access(reviewer, eoc::RealClock(), {});
//   access.Start();
//   const auto answer = access.Check(request, {.verb = "create", .ns = "team-a"}, retry);
//   switch (answer.verdict) { case Verdict::kAllowed: ...; case Verdict::kPending: defer ... }
//
// Reviews run on the access control's own threads, never on an I/O thread: a Check the cache
// cannot answer starts the reviews it needs and returns kPending, and the waiter it made runs once
// the answer is in (the caller asks again then; a token then a permission can take two rounds).
// Concurrent asks for one review share it. Answers are kept for a TTL (Options) and refreshed
// in the background once three quarters of it have passed, while the kept answer goes on serving;
// past its TTL an answer still serves, for Options::stale_grace, while a fresh review is sought
// (so that an API-server outage refuses no caller seen shortly before it), and after that it is
// forgotten. Both caches are bounded (least recently used go first), and so is the queue of
// reviews: past it a caller with no known answer is told to come back (kUnavailable).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/lru_map.h"
#include "server/http.h"

namespace eoc::server {

// A caller as Kubernetes names it (authentication.k8s.io/v1 UserInfo).
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::vector<std::pair<std::string, std::vector<std::string>>> extra;
};

// What a caller asks to do: `verb` on inferencepools/pick in namespace `ns`, or, with `path`
// set, `verb` on that non-resource URL.
struct AccessRequest {
  std::string_view verb;
  std::string_view ns;
  std::string_view path;
};

// The group and the resource, with its subresource, that pick permissions are asked on.
inline constexpr std::string_view kPickGroup = "eoc.dev";
inline constexpr std::string_view kPickResource = "inferencepools";
inline constexpr std::string_view kPickSubresource = "pick";

// Kubernetes' reviews, asked synchronously on the access control's threads (the production one
// calls the API server; tests have their own).
class Reviewer {
 public:
  enum class Outcome : std::uint8_t {
    kYes,          // the token is valid (the user is set) / the request is allowed
    kNo,           // the token is not valid / the request is not allowed
    kUnavailable,  // no answer: the API server did not give one (down, refused, throttled)
  };
  struct TokenAnswer {
    Outcome outcome = Outcome::kUnavailable;
    UserInfo user;
  };

  virtual ~Reviewer() = default;
  virtual TokenAnswer ReviewToken(const std::string& token) = 0;
  virtual Outcome ReviewAccess(const UserInfo& user, const AccessRequest& request) = 0;

 protected:
  Reviewer() = default;
  Reviewer(const Reviewer&) = default;
  Reviewer& operator=(const Reviewer&) = default;
  Reviewer(Reviewer&&) = default;
  Reviewer& operator=(Reviewer&&) = default;
};

class AccessControl {
 public:
  struct Options {
    // Put before a client certificate's CN and each O, so that its names cannot be taken for the
    // cluster's own users and groups (as the API server's --oidc-username-prefix).
    std::string cert_prefix = "eoc:";
    // How long answers are kept: a token's review, an allowed and a refused request (the
    // kubelet's webhook authenticator and authorizer keep theirs as long).
    std::chrono::seconds token_ttl{120};
    std::chrono::seconds allowed_ttl{300};
    std::chrono::seconds denied_ttl{30};
    // How long past its TTL an answer still serves while no fresh one can be had.
    std::chrono::seconds stale_grace{600};
    // Between tries of a review the API server did not answer.
    std::chrono::seconds retry_after_unavailable{1};
    std::size_t max_tokens = 8192;
    std::size_t max_decisions = 65536;
    std::size_t max_reviews_queued = 1024;  // distinct reviews waiting or running at once
    int threads = 2;
  };

  enum class Verdict : std::uint8_t {
    kAllowed,
    kUnauthenticated,  // 401: no credentials, or ones Kubernetes does not accept
    kForbidden,        // 403
    kPending,          // not known yet: the waiter will run
    kUnavailable,      // 503: no answer can be had now
  };
  // Who a credential names, and its key among the decisions.
  struct Identity {
    UserInfo user;
    std::string key;
  };
  struct Answer {
    Verdict verdict = Verdict::kUnavailable;
    std::string message;  // for a refusal: what to tell the caller (printable, bounded)
    std::shared_ptr<const Identity> identity;  // who was allowed (kAllowed only)
  };

  AccessControl(Reviewer& reviewer, const Clock& clock, Options options);
  ~AccessControl();  // Stop()s
  AccessControl(const AccessControl&) = delete;
  AccessControl& operator=(const AccessControl&) = delete;
  AccessControl(AccessControl&&) = delete;
  AccessControl& operator=(AccessControl&&) = delete;

  void Start();
  // Ends the review threads; reviews still queued end as kUnavailable (their waiters run).
  void Stop();

  // What runs once the review a pending check waits for has ended, on a review thread (it must
  // not block); and what makes it, called only when the check is pending (under the access
  // control's lock: it must not call back), so that a check the cache answers makes nothing.
  using Waiter = std::function<void()>;
  using MakeWaiter = std::function<Waiter()>;

  // Whether the caller of `request` may do `what`. kPending: `make_waiter` was called, and the
  // waiter it made runs once, when the review it waits for has ended. `make_waiter` may be empty
  // (nothing is told).
  Answer Check(const Request& request, const AccessRequest& what, const MakeWaiter& make_waiter);

  // The kUnavailable answer to a caller whose review has not ended (or could not be asked).
  static Answer Unanswered();

  // Reviews asked of the reviewer since the start, for tests and metrics.
  std::uint64_t reviews() const;

 private:
  // A review's answer, as kept.
  struct Cached {
    Reviewer::Outcome outcome = Reviewer::Outcome::kUnavailable;
    std::shared_ptr<const Identity> identity;  // a valid credential's
    Clock::TimePoint refresh_at;               // from then on, a use queues a fresh review
    Clock::TimePoint expires;   // the TTL's end (for kUnavailable: when to ask again)
    Clock::TimePoint retry_at;  // no fresh review before then (the last one had no answer)
  };
  struct Job;
  enum class Use : std::uint8_t;

  // What `cached` (which may be null) is good for at `now`, and a refresh queued when it is due.
  // Under mu_.
  Use UseOf(const std::string& key, Cached* cached, Clock::TimePoint now,
            const std::function<void(Job&)>& fill);
  // Queues the review `key` unless it is queued already, adding a waiter from `make_waiter` (when
  // set) to its
  // waiters; `fill` sets what the review asks. False when the queue is full or stopping. Under
  // mu_.
  bool Enqueue(const std::string& key, const MakeWaiter* make_waiter,
               const std::function<void(Job&)>& fill);
  void Run();
  void Review(Job& job);

  Reviewer& reviewer_;
  const Clock& clock_;
  const Options options_;

  mutable std::mutex mu_;
  std::condition_variable work_;
  bool stopping_ = false;
  std::uint64_t reviews_ = 0;
  LruMap<std::string, Cached> identities_;  // by credential: a token, or a certificate's names
  LruMap<std::string, Cached> decisions_;   // by identity, verb and target
  std::unordered_map<std::string, std::shared_ptr<Job>> queued_;  // by key: waiting or running
  std::deque<std::shared_ptr<Job>> queue_;                        // waiting
  std::vector<std::thread> threads_;
};

}  // namespace eoc::server
