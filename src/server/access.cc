#include "server/access.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "common/text.h"

namespace eoc::server {
namespace {

using Outcome = Reviewer::Outcome;
using Verdict = AccessControl::Verdict;
using Answer = AccessControl::Answer;

// Separates the parts of a cache key; no name Kubernetes accepts holds it, and a token or a
// certificate's names that do only make a key of their own.
constexpr char kSep = '\x1f';
bool IsSystemName(std::string_view name) { return name.starts_with("system:"); }

// The token of an "Authorization: Bearer <token>" header (the scheme's case ignored); empty when
// the header is not one.
std::string_view BearerToken(std::string_view value) {
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size()) return {};
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = value[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != kScheme[i]) return {};
  }
  std::string_view token = value.substr(kScheme.size());
  const bool printable =
      std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < '\x7f'; });
  return printable ? token : std::string_view();
}

// The key of `user` among the decisions: everything a SubjectAccessReview is asked about them.
std::string IdentityKey(const UserInfo& user) {
  std::string key = user.username;
  key.append(1, kSep).append(user.uid);
  for (const auto& group : user.groups) key.append(1, kSep).append("g=").append(group);
  for (const auto& [name, values] : user.extra) {
    key.append(1, kSep).append("x=").append(name);
    for (const auto& value : values) key.append(1, kSep).append(value);
  }
  return key;
}

// Whether an answer that expires at `expires` is still good at `now`, `grace` past it included.
bool Within(Clock::TimePoint now, Clock::TimePoint expires, std::chrono::seconds grace) {
  return now < expires || now - expires < grace;
}

Answer Refuse(Verdict verdict, std::string message) { return {verdict, std::move(message)}; }

std::string Denied(const UserInfo& user, const AccessRequest& what) {
  std::string message =
      "user " + Quoted(user.username) + " may not " + std::string(what.verb) + " ";
  if (!what.path.empty()) return message + std::string(what.path);
  return message + std::string(kPickResource) + "/" + std::string(kPickSubresource) + " (" +
         std::string(kPickGroup) + ") in namespace " + Quoted(what.ns);
}

}  // namespace

AccessControl::Answer AccessControl::Unanswered() {
  return Refuse(Verdict::kUnavailable,
                "the Kubernetes API server has not answered this caller's review yet; try again");
}

// What a queued review asks, and whom it tells.
struct AccessControl::Job {
  std::string key;
  bool token = false;
  std::string credential;                    // a token's review: the token
  std::shared_ptr<const Identity> identity;  // a decision's: whose, and what
  std::string verb;
  std::string ns;
  std::string path;
  std::vector<Waiter> waiters;
};

// What a cached answer is good for.
enum class AccessControl::Use : std::uint8_t {
  kAnswer,       // its outcome answers
  kUnavailable,  // no answer could be had a moment ago: 503 until it is asked again
  kAsk,          // none, or past its grace: review anew
};

AccessControl::AccessControl(Reviewer& reviewer, const Clock& clock, Options options)
    : reviewer_(reviewer),
      clock_(clock),
      options_(std::move(options)),
      identities_(options_.max_tokens),
      decisions_(options_.max_decisions) {}

AccessControl::~AccessControl() { Stop(); }

void AccessControl::Start() {
  const std::lock_guard lock(mu_);
  if (!threads_.empty() || stopping_) return;
  for (int i = 0; i < std::max(1, options_.threads); ++i) threads_.emplace_back([this] { Run(); });
}

void AccessControl::Stop() {
  std::vector<std::thread> threads;
  std::deque<std::shared_ptr<Job>> left;
  {
    const std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  work_.notify_all();
  for (auto& thread : threads) thread.join();
  {
    const std::lock_guard lock(mu_);
    left.swap(queue_);
    queued_.clear();
  }
  for (const auto& job : left) {
    for (const auto& waiter : job->waiters) waiter();
  }
}

std::uint64_t AccessControl::reviews() const {
  const std::lock_guard lock(mu_);
  return reviews_;
}

AccessControl::Use AccessControl::UseOf(const std::string& key, Cached* cached,
                                        Clock::TimePoint now,
                                        const std::function<void(Job&)>& fill) {
  if (cached == nullptr) return Use::kAsk;
  if (cached->outcome == Outcome::kUnavailable) {
    return now < cached->expires ? Use::kUnavailable : Use::kAsk;
  }
  if (!Within(now, cached->expires, options_.stale_grace)) return Use::kAsk;
  if (now >= cached->refresh_at && now >= cached->retry_at) Enqueue(key, nullptr, fill);
  return Use::kAnswer;
}

AccessControl::Answer AccessControl::Check(const Request& request, const AccessRequest& what,
                                           const MakeWaiter& make_waiter) {
  // The credential's key: a bearer token's, else a verified client certificate's.
  thread_local std::string key;
  const auto authorization = request.header("authorization");
  const PeerCertificate* cert = request.peer_certificate();
  std::string_view token;
  if (authorization) {
    token = BearerToken(*authorization);
    if (token.empty()) {
      return Refuse(Verdict::kUnauthenticated,
                    "authorization: only a bearer token is accepted (Authorization: Bearer ...)");
    }
    key.assign("t").append(1, kSep).append(token);
  } else if (cert != nullptr) {
    if (cert->common_name.empty()) {
      return Refuse(Verdict::kUnauthenticated, "client certificate: its subject has no CN");
    }
    const bool system = IsSystemName(cert->common_name) ||
                        std::any_of(cert->organizations.begin(), cert->organizations.end(),
                                    [](const std::string& o) { return IsSystemName(o); });
    if (system) {
      return Refuse(Verdict::kUnauthenticated,
                    "client certificate: its subject names a system: user or group, which no "
                    "client certificate may claim");
    }
    key.assign("c").append(1, kSep).append(cert->common_name);
    for (const auto& o : cert->organizations) key.append(1, kSep).append(o);
  } else {
    return Refuse(Verdict::kUnauthenticated,
                  "no credentials: send a bearer token (Authorization: Bearer ...) or a client "
                  "certificate");
  }

  const Clock::TimePoint now = clock_.Now();
  std::unique_lock lock(mu_);
  std::shared_ptr<const Identity> identity;
  Cached* cached = identities_.Touch(key);
  const auto fill_token = [&](Job& job) {
    job.token = true;
    job.credential = std::string(token);
  };
  if (cert != nullptr && token.empty() && cached == nullptr) {
    // A certificate names its caller itself: no review.
    auto made = std::make_shared<Identity>();
    made->user.username = options_.cert_prefix + cert->common_name;
    for (const auto& o : cert->organizations) made->user.groups.push_back(options_.cert_prefix + o);
    made->key = IdentityKey(made->user);
    cached = &identities_.Put(key, Cached{.outcome = Outcome::kYes,
                                          .identity = std::move(made),
                                          .refresh_at = Clock::TimePoint::max(),
                                          .expires = Clock::TimePoint::max()});
  }
  switch (UseOf(key, cached, now, fill_token)) {
    case Use::kAnswer:
      if (cached->outcome != Outcome::kYes) {
        return Refuse(Verdict::kUnauthenticated,
                      "the bearer token was not accepted by the Kubernetes API server "
                      "(TokenReview)");
      }
      identity = cached->identity;
      break;
    case Use::kUnavailable:
      return Unanswered();
    case Use::kAsk:
      return Enqueue(key, &make_waiter, fill_token) ? Answer{Verdict::kPending, {}} : Unanswered();
  }

  // What it asks, of whom.
  key.assign("d").append(1, kSep).append(identity->key).append(1, kSep).append(what.verb);
  key.append(1, kSep).append(what.path.empty() ? what.ns : what.path);
  const auto fill_decision = [&](Job& job) {
    job.identity = identity;
    job.verb = std::string(what.verb);
    job.ns = std::string(what.ns);
    job.path = std::string(what.path);
  };
  cached = decisions_.Touch(key);
  switch (UseOf(key, cached, now, fill_decision)) {
    case Use::kAnswer:
      if (cached->outcome == Outcome::kYes) return {Verdict::kAllowed, {}, identity};
      lock.unlock();
      return Refuse(Verdict::kForbidden, Denied(identity->user, what));
    case Use::kUnavailable:
      return Unanswered();
    case Use::kAsk:
      break;
  }
  return Enqueue(key, &make_waiter, fill_decision) ? Answer{Verdict::kPending, {}} : Unanswered();
}

bool AccessControl::Enqueue(const std::string& key, const MakeWaiter* make_waiter,
                            const std::function<void(Job&)>& fill) {
  if (stopping_) return false;
  if (const auto it = queued_.find(key); it != queued_.end()) {
    if (make_waiter != nullptr && *make_waiter) it->second->waiters.push_back((*make_waiter)());
    return true;
  }
  if (queued_.size() >= options_.max_reviews_queued) return false;
  auto job = std::make_shared<Job>();
  job->key = key;
  fill(*job);
  if (make_waiter != nullptr && *make_waiter) job->waiters.push_back((*make_waiter)());
  queued_.emplace(key, job);
  queue_.push_back(std::move(job));
  work_.notify_one();
  return true;
}

void AccessControl::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Review(*job);
    lock.lock();
  }
}

void AccessControl::Review(Job& job) {
  Outcome outcome = Outcome::kUnavailable;
  std::shared_ptr<const Identity> identity;
  if (job.token) {
    Reviewer::TokenAnswer answer = reviewer_.ReviewToken(job.credential);
    outcome = answer.outcome;
    if (outcome == Outcome::kYes) {
      auto made = std::make_shared<Identity>();
      made->user = std::move(answer.user);
      made->key = IdentityKey(made->user);
      identity = std::move(made);
    }
  } else {
    outcome = reviewer_.ReviewAccess(job.identity->user,
                                     {.verb = job.verb, .ns = job.ns, .path = job.path});
  }
  std::vector<Waiter> waiters;
  {
    const std::lock_guard lock(mu_);
    ++reviews_;
    const Clock::TimePoint now = clock_.Now();
    auto& cache = job.token ? identities_ : decisions_;
    Cached* cached = cache.Find(job.key);
    if (outcome == Outcome::kUnavailable) {
      const auto retry = now + options_.retry_after_unavailable;
      if (cached != nullptr && cached->outcome != Outcome::kUnavailable &&
          Within(now, cached->expires, options_.stale_grace)) {
        cached->retry_at = retry;  // the known answer serves on, within its grace
      } else if (cache.Capacity() > 0) {
        cache.Put(job.key, Cached{.outcome = outcome, .expires = retry, .retry_at = retry});
      }
    } else if (cache.Capacity() > 0) {
      const auto ttl = job.token                  ? options_.token_ttl
                       : outcome == Outcome::kYes ? options_.allowed_ttl
                                                  : options_.denied_ttl;
      cache.Put(job.key, Cached{.outcome = outcome,
                                .identity = std::move(identity),
                                .refresh_at = now + ttl * 3 / 4,
                                .expires = now + ttl,
                                .retry_at = now});
    }
    queued_.erase(job.key);
    waiters.swap(job.waiters);
  }
  for (const auto& waiter : waiters) waiter();
}

}  // namespace eoc::server
