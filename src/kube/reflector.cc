#include "kube/reflector.h"

#include <algorithm>

#include "common/object_meta.h"

namespace eoc::kube {

Reflector::Reflector(Client& client, ReflectorOptions options, ReflectorSink& sink,
                     const Clock& clock)
    : client_(client),
      options_(std::move(options)),
      sink_(sink),
      clock_(clock),
      metrics_(options_.metrics != nullptr ? *options_.metrics : default_metrics_),
      rng_(std::random_device{}()) {}

void Reflector::Run() {
  while (!stopping()) {
    if (!ListOnce()) {
      if (!SleepFor(backoff_)) return;
      continue;
    }
    // Watch, and watch again from the last version each time the server ends a watch; relist
    // only after an error or when the version has been compacted away.
    for (;;) {
      const WatchEnd end = WatchOnce();
      if (end == WatchEnd::kStopped) return;
      if (end == WatchEnd::kTimeout) continue;
      break;  // kExpired relists from the last version first; a 410 there relists from ""
    }
    if (!SleepFor(backoff_)) return;
  }
}

void Reflector::Stop() {
  const std::lock_guard lock(mu_);
  stop_ = true;
  if (current_watch_ != nullptr) current_watch_->Stop();
  wake_.notify_all();
}

std::string Reflector::LastResourceVersion() const {
  const std::lock_guard lock(mu_);
  return last_rv_;
}

void Reflector::SetLastResourceVersion(const std::string& rv) {
  if (rv.empty()) return;
  const std::lock_guard lock(mu_);
  last_rv_ = rv;
}

bool Reflector::stopping() const {
  const std::lock_guard lock(mu_);
  return stop_;
}

bool Reflector::ListOnce() {
  ListOptions o;
  o.label_selector = options_.label_selector;
  o.field_selector = options_.field_selector;
  o.limit = options_.page_size;
  {
    const std::lock_guard lock(mu_);
    // As client-go: "0" (any version, from the API server's cache) the first time, the last
    // version seen after that, and "" (the newest, from etcd) once that one is gone.
    o.resource_version = rv_expired_ ? "" : (last_rv_.empty() ? "0" : last_rv_);
  }
  auto page = client_.ListAll(options_.resource, options_.ns, o);
  if (!page) {
    if (page.error().IsGone()) {
      const std::lock_guard lock(mu_);
      rv_expired_ = true;
    }
    Failed(page.error());
    return false;
  }
  metrics_.OnList(page->items.size());
  {
    const std::lock_guard lock(mu_);
    rv_expired_ = false;
  }
  // The version first: whoever sees the sink synced may read it at once.
  SetLastResourceVersion(page->resource_version);
  sink_.Replace(std::move(page->items), page->resource_version);
  Healthy();
  return true;
}

Reflector::WatchEnd Reflector::WatchOnce() {
  if (options_.before_watch) options_.before_watch();
  ListOptions o;
  o.label_selector = options_.label_selector;
  o.field_selector = options_.field_selector;
  o.resource_version = LastResourceVersion();
  o.allow_watch_bookmarks = true;
  o.timeout_seconds = WatchTimeout().count();
  auto watch = client_.StartWatch(options_.resource, options_.ns, o);
  if (!watch) {
    if (watch.error().IsGone()) return WatchEnd::kExpired;
    Failed(watch.error());
    return WatchEnd::kError;
  }
  {
    const std::lock_guard lock(mu_);
    if (stop_) return WatchEnd::kStopped;
    current_watch_ = watch->get();
  }
  metrics_.OnWatchStart();
  Healthy();
  const WatchEnd end = Consume(**watch);
  const std::lock_guard lock(mu_);
  current_watch_ = nullptr;
  return stop_ ? WatchEnd::kStopped : end;
}

Reflector::WatchEnd Reflector::Consume(Watch& watch) {
  for (;;) {
    auto next = watch.Next();
    if (!next) {
      if (stopping()) return WatchEnd::kStopped;
      Failed(next.error());
      return WatchEnd::kError;
    }
    if (!next->has_value()) return WatchEnd::kTimeout;
    WatchEvent& event = **next;
    metrics_.OnEvent(event.type);
    switch (event.type) {
      case WatchEventType::kBookmark:
        SetLastResourceVersion(ResourceVersionOf(event.object));
        break;
      case WatchEventType::kError: {
        // An ERROR event inside a 200 answer: 410 Expired means our version is gone.
        const Status status = DecodeStatus(200, event.object.dump());
        if (status.IsGone()) return WatchEnd::kExpired;
        Failed(status);
        return WatchEnd::kError;
      }
      default: {
        std::string rv = ResourceVersionOf(event.object);
        sink_.Apply(event.type, std::move(event.object));
        SetLastResourceVersion(rv);
        Healthy();
      }
    }
  }
}

bool Reflector::Stale() const {
  const std::lock_guard lock(mu_);
  return failing_since_ && clock_.Now() - *failing_since_ >= options_.stale_after;
}

void Reflector::Failed(const Status& status) {
  metrics_.OnError(status);
  const auto now = clock_.Now();
  std::chrono::nanoseconds failing_for{0};
  {
    const std::lock_guard lock(mu_);
    if (!failing_since_) failing_since_ = now;
    failing_for = now - *failing_since_;
  }
  if (!reported_stale_ && failing_for >= options_.stale_after) {
    reported_stale_ = true;
    metrics_.OnStale(true, failing_for);
  }
  const bool long_healthy = now - last_failure_ > options_.backoff_reset;
  last_failure_ = now;
  if (backoff_.count() == 0 || long_healthy) {
    backoff_ = options_.initial_backoff;
  } else {
    backoff_ = std::min(backoff_ * 2, options_.max_backoff);
  }
  // The wait to come: the Retry-After of a 429, if longer than the backoff.
  if (status.retry_after) {
    backoff_ = std::max<std::chrono::milliseconds>(backoff_, *status.retry_after);
  }
}

void Reflector::Healthy() {
  const auto now = clock_.Now();
  // A success ends the wait between attempts; the growth resets only after a healthy period.
  if (now - last_failure_ > options_.backoff_reset) backoff_ = std::chrono::milliseconds(0);
  std::chrono::nanoseconds failed_for{0};
  {
    const std::lock_guard lock(mu_);
    if (!failing_since_) return;
    failed_for = now - *failing_since_;
    failing_since_.reset();
  }
  if (reported_stale_) {
    reported_stale_ = false;
    metrics_.OnStale(false, failed_for);
  }
}

bool Reflector::SleepFor(std::chrono::nanoseconds d) {
  std::uniform_real_distribution<double> jitter(1.0, 2.0);
  const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(d * jitter(rng_));
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, wait, [this] { return stop_; });
  return !stop_;
}

std::chrono::seconds Reflector::WatchTimeout() {
  std::uniform_int_distribution<std::int64_t> pick(options_.min_watch_timeout.count(),
                                                   options_.max_watch_timeout.count());
  return std::chrono::seconds(pick(rng_));
}

}  // namespace eoc::kube
