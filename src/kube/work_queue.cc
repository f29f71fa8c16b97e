#include "kube/work_queue.h"

#include <algorithm>
#include <limits>

#include "common/backoff.h"

namespace eoc::kube {

using std::chrono::nanoseconds;

namespace {

// A hundred years: far beyond any delay that means anything, and far from overflowing a steady
// time point (about 292 years of nanoseconds), so `now + delay` is always safe.
constexpr nanoseconds kMaxDelay = std::chrono::hours(24 * 365 * 100);

}  // namespace

// ---- rate limiters ----

ItemExponentialFailureRateLimiter::ItemExponentialFailureRateLimiter(nanoseconds base,
                                                                     nanoseconds max_delay)
    : base_(std::max(base, nanoseconds::zero())),
      max_delay_(std::max(max_delay, nanoseconds::zero())) {}

nanoseconds ItemExponentialFailureRateLimiter::When(const std::string& key) {
  const std::lock_guard lock(mu_);
  int& failures = failures_[key];
  const int exponent = failures;
  // Saturate rather than wrap: the delay is capped long before, the count stays meaningful.
  if (failures < std::numeric_limits<int>::max()) ++failures;
  return BackoffDelay({.initial = base_, .max = max_delay_, .factor = 2}, exponent);
}

void ItemExponentialFailureRateLimiter::Forget(const std::string& key) {
  const std::lock_guard lock(mu_);
  failures_.erase(key);
}

int ItemExponentialFailureRateLimiter::NumRequeues(const std::string& key) {
  const std::lock_guard lock(mu_);
  const auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, const Clock& clock)
    : bucket_(qps, burst, clock) {}

nanoseconds BucketRateLimiter::When(const std::string& /*key*/) { return bucket_.Reserve(); }

void BucketRateLimiter::Forget(const std::string& /*key*/) {}

int BucketRateLimiter::NumRequeues(const std::string& /*key*/) { return 0; }

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

nanoseconds MaxOfRateLimiter::When(const std::string& key) {
  // Every limiter is asked, not only until one answers highest: each must record the retry.
  nanoseconds longest = nanoseconds::zero();
  for (const auto& limiter : limiters_) longest = std::max(longest, limiter->When(key));
  return longest;
}

void MaxOfRateLimiter::Forget(const std::string& key) {
  for (const auto& limiter : limiters_) limiter->Forget(key);
}

int MaxOfRateLimiter::NumRequeues(const std::string& key) {
  int most = 0;
  for (const auto& limiter : limiters_) most = std::max(most, limiter->NumRequeues(key));
  return most;
}

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(const Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(
      std::chrono::milliseconds(5), std::chrono::seconds(1000)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(10, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

// ---- work queue ----

WorkQueue::WorkQueue(std::string name, const Clock& clock,
                     std::unique_ptr<RateLimiter> rate_limiter, WorkQueueMetrics* metrics)
    : name_(std::move(name)),
      clock_(clock),
      rate_limiter_(rate_limiter ? std::move(rate_limiter) : DefaultControllerRateLimiter(clock)),
      metrics_(metrics != nullptr ? metrics : &no_metrics_),
      delay_wake_(clock),
      delay_thread_([this] { DelayLoop(); }) {}

WorkQueue::~WorkQueue() {
  {
    const std::lock_guard lock(mu_);
    ShutDownLocked(/*drain=*/false);
  }
  delay_thread_.join();
}

void WorkQueue::Add(const std::string& key) {
  const std::lock_guard lock(mu_);
  if (shutting_down_) return;
  AddLocked(key);
}

void WorkQueue::AddLocked(const std::string& key) {
  if (!dirty_.try_emplace(key, clock_.Now()).second) return;  // already waiting: once is enough
  metrics_->OnAdd();
  metrics_->OnDepth(dirty_.size());
  // A key being processed is queued by its Done, so that no two workers ever hold it at once.
  if (processing_.contains(key)) return;
  queue_.push_back(key);
  ready_cv_.notify_one();
}

void WorkQueue::AddAfter(const std::string& key, nanoseconds delay) {
  const Clock::TimePoint due = clock_.Now() + std::min(delay, kMaxDelay);
  const std::lock_guard lock(mu_);
  if (shutting_down_) return;
  metrics_->OnRetry();
  if (delay <= nanoseconds::zero()) {
    AddLocked(key);
    return;
  }
  ScheduleLocked(key, due);
}

void WorkQueue::ScheduleLocked(const std::string& key, Clock::TimePoint due) {
  const auto it = due_by_key_.find(key);
  if (it == due_by_key_.end()) {
    due_by_key_.emplace(key, due);
  } else {
    if (it->second <= due) return;  // the earlier pending add stands, as client-go
    due_order_.erase({it->second, key});
    it->second = due;
  }
  due_order_.emplace(due, key);
  delay_wake_.Notify();  // the loop may be sleeping until a later time
}

void WorkQueue::DelayLoop() {
  for (;;) {
    // The ticket first: a new due time or a shutdown that comes while this pass looks is not
    // missed. Early wake-ups only cost one more pass.
    const Wakeup::Ticket ticket = delay_wake_.TakeTicket();
    Clock::TimePoint next_due = Clock::TimePoint::max();
    {
      const std::lock_guard lock(mu_);
      if (shutting_down_) return;
      PromoteDueLocked(clock_.Now());
      // A copy: AddAfter (moving a key earlier) and ShutDown erase the node while we sleep.
      if (!due_order_.empty()) next_due = due_order_.begin()->first;
    }
    delay_wake_.SleepUntilNotified(next_due, ticket);
  }
}

void WorkQueue::PromoteDueLocked(Clock::TimePoint now) {
  while (!due_order_.empty() && due_order_.begin()->first <= now) {
    const auto node = due_order_.extract(due_order_.begin());
    const std::string& key = node.value().second;
    due_by_key_.erase(key);
    AddLocked(key);
  }
}

void WorkQueue::AddRateLimited(const std::string& key) {
  // A queue that is shutting down would drop the add: don't grow the limiter's state for it.
  if (ShuttingDown()) return;
  AddAfter(key, rate_limiter_->When(key));
}

void WorkQueue::Forget(const std::string& key) { rate_limiter_->Forget(key); }

int WorkQueue::NumRequeues(const std::string& key) { return rate_limiter_->NumRequeues(key); }

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  ready_cv_.wait(lock, [this] { return !queue_.empty() || shutting_down_; });
  if (queue_.empty()) return std::nullopt;  // shut down, and nothing left to hand out
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  const ClockTime now = clock_.Now();
  const auto dirty = dirty_.extract(key);  // every queued key is dirty
  metrics_->OnDepth(dirty_.size());
  if (!dirty.empty()) metrics_->OnLatency(now - dirty.mapped());
  processing_.emplace(key, now);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  const std::lock_guard lock(mu_);
  const auto processing = processing_.extract(key);
  // Not handed out by Get: queueing it here would let it be queued twice.
  if (processing.empty()) return;
  metrics_->OnWorkDuration(clock_.Now() - processing.mapped());
  if (dirty_.contains(key)) {
    queue_.push_back(key);  // added again while it was being processed
    ready_cv_.notify_one();
  }
  if (processing_.empty()) drained_cv_.notify_all();
}

std::size_t WorkQueue::Len() const {
  const std::lock_guard lock(mu_);
  return queue_.size();
}

void WorkQueue::ShutDown() {
  const std::lock_guard lock(mu_);
  ShutDownLocked(/*drain=*/false);
}

void WorkQueue::ShutDownWithDrain() {
  std::unique_lock lock(mu_);
  ShutDownLocked(/*drain=*/true);
  drained_cv_.wait(lock, [this] { return processing_.empty() || !drain_; });
}

bool WorkQueue::ShuttingDown() const {
  const std::lock_guard lock(mu_);
  return shutting_down_;
}

void WorkQueue::ShutDownLocked(bool drain) {
  shutting_down_ = true;
  drain_ = drain;  // a plain ShutDown also ends a ShutDownWithDrain's wait
  due_by_key_.clear();
  due_order_.clear();
  ready_cv_.notify_all();
  delay_wake_.Notify();
  drained_cv_.notify_all();
}

}  // namespace eoc::kube
