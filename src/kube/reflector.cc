#include "kube/reflector.h"

#include <algorithm>
#include <random>

#include "common/object_meta.h"

namespace eoc::kube {
namespace {
// A watch that the server ends sooner than this without an event is a failure (client-go's
// "very short watch").
constexpr std::chrono::seconds kShortWatch{1};
}  // namespace

Reflector::Reflector(Client& client, ReflectorOptions options, ReflectorSink& sink,
                     const Clock& clock)
    : client_(client),
      options_(std::move(options)),
      sink_(sink),
      clock_(clock),
      metrics_(options_.metrics != nullptr ? *options_.metrics : default_metrics_),
      random_(options_.random ? options_.random : SeededRandom(std::random_device{}())),
      wake_(clock),
      backoff_(Policy(options_), random_) {}

BackoffPolicy Reflector::Policy(const ReflectorOptions& options) {
  // client-go's reflector: 800 ms doubling to 30 s, each wait up to twice its size.
  return {.initial = options.initial_backoff, .max = options.max_backoff, .factor = 2, .jitter = 1};
}

void Reflector::Run() {
  while (!stopping()) {
    if (!ListOnce()) {
      if (!SleepFor(wait_)) return;
      continue;
    }
    // Watch, and watch again from the last version each time the server ends a watch; relist
    // only after an error or a 410.
    for (;;) {
      const WatchEnd end = WatchOnce();
      if (end == WatchEnd::kStopped) return;
      if (end == WatchEnd::kTimeout) continue;
      break;
    }
    if (!SleepFor(wait_)) return;
  }
}

void Reflector::Stop() {
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
    if (current_watch_ != nullptr) current_watch_->Stop();
  }
  wake_.Notify();
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

bool Reflector::stopping() const { return stop_.load(); }

bool Reflector::ListOnce() {
  ListOptions o;
  o.label_selector = options_.label_selector;
  o.field_selector = options_.field_selector;
  {
    const std::lock_guard lock(mu_);
    // "0" (any version, from the API server's cache) the first time, the last version seen after
    // that, and "" (the newest, from etcd) once that one is unusable.
    o.resource_version = rv_expired_ ? "" : (last_rv_.empty() ? "0" : last_rv_);
  }
  // A list from a given version is asked whole unless the server pages (the header says why).
  const bool whole = !o.resource_version.empty() && o.resource_version != "0" && !server_pages_;
  Result<ListPage> page = [&] {
    if (whole) return client_.List(options_.resource, options_.ns, o);
    o.limit = options_.page_size;
    return client_.ListAll(options_.resource, options_.ns, o);
  }();
  if (!page) {
    if (page.error().IsGone()) {
      const std::lock_guard lock(mu_);
      rv_expired_ = true;
    }
    Failed(page.error());
    return false;
  }
  if (page->paged) server_pages_ = true;
  metrics_.OnList(page->items.size());
  {
    const std::lock_guard lock(mu_);
    rv_expired_ = false;
  }
  // The version first: whoever sees the sink synced may read it at once.
  SetLastResourceVersion(page->resource_version);
  sink_.Replace(std::move(page->items), page->resource_version);
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
    if (watch.error().IsGone()) return Expired(watch.error());
    Failed(watch.error());
    return WatchEnd::kError;
  }
  {
    const std::lock_guard lock(mu_);
    if (stop_) return WatchEnd::kStopped;
    current_watch_ = watch->get();
    watch_opened_ = clock_.Now();
  }
  metrics_.OnWatchStart();
  const WatchEnd end = Consume(**watch);
  const std::lock_guard lock(mu_);
  current_watch_ = nullptr;
  watch_opened_.reset();
  return stop_ ? WatchEnd::kStopped : end;
}

Reflector::WatchEnd Reflector::Consume(Watch& watch) {
  for (bool any_event = false;; any_event = true) {
    auto next = watch.Next();
    if (!next) {
      if (stopping()) return WatchEnd::kStopped;
      HeldIfOpenLong();
      Failed(next.error());
      return WatchEnd::kError;
    }
    if (!next->has_value()) {  // the server ended the watch, normally at its timeout
      HeldIfOpenLong();
      if (!any_event && OpenFor() < kShortWatch) {
        // As client-go: a server that ends every watch at once would be asked again at once,
        // forever; this is a failure (backoff, then a relist).
        Failed({0, "ShortWatch", "the server ended the watch at once, without an event", {}});
        return WatchEnd::kError;
      }
      return WatchEnd::kTimeout;
    }
    WatchEvent& event = **next;
    metrics_.OnEvent(event.type);
    switch (event.type) {
      case WatchEventType::kBookmark:
        SetLastResourceVersion(ResourceVersionOf(event.object));
        Held();
        break;
      case WatchEventType::kError: {
        // An ERROR event inside a 200 answer: 410 Expired means the version cannot be watched.
        HeldIfOpenLong();
        const Status status = DecodeStatus(200, event.object.dump());
        if (status.IsGone()) return Expired(status);
        Failed(status);
        return WatchEnd::kError;
      }
      default: {
        std::string rv = ResourceVersionOf(event.object);
        sink_.Apply(event.type, std::move(event.object));
        SetLastResourceVersion(rv);
        Held();
      }
    }
  }
}

Reflector::WatchEnd Reflector::Expired(const Status& status) {
  // The relist names the last version first: asked whole, the watch cache answers it with a
  // version it can watch from. A second 410 without a held watch in between means the server
  // keeps answering with a version it cannot watch from: the next list names the newest.
  if (++gone_since_held_ >= 2) {
    const std::lock_guard lock(mu_);
    rv_expired_ = true;
  }
  Failed(status);
  return WatchEnd::kExpired;
}

bool Reflector::Stale() const {
  const std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  return failing_since_ && now - *failing_since_ >= options_.stale_after && !HoldingLocked(now);
}

std::chrono::nanoseconds Reflector::OpenFor() const {
  const std::lock_guard lock(mu_);
  return watch_opened_ ? clock_.Now() - *watch_opened_ : std::chrono::nanoseconds::zero();
}

bool Reflector::HoldingLocked(Clock::TimePoint now) const {
  return watch_opened_ && now - *watch_opened_ >= options_.watch_hold;
}

void Reflector::HeldIfOpenLong() {
  bool held = false;
  {
    const std::lock_guard lock(mu_);
    held = HoldingLocked(clock_.Now());
  }
  if (held) Held();
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
  // The growth starts over after a healthy period (client-go's backoff manager).
  if (now - last_failure_ > options_.backoff_reset) backoff_.Reset();
  last_failure_ = now;
  // The wait to come: at least the Retry-After of a 429, when there is one.
  wait_ = backoff_.NextAtLeast(status.retry_after.value_or(std::chrono::seconds::zero()));
}

void Reflector::Held() {
  gone_since_held_ = 0;
  const auto now = clock_.Now();
  // A held watch ends the wait between attempts only after a healthy period; so does the growth.
  if (now - last_failure_ > options_.backoff_reset) {
    wait_ = std::chrono::nanoseconds::zero();
    backoff_.Reset();
  }
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
  return !wake_.SleepFor(d, [this] { return stop_.load(); });
}

std::chrono::seconds Reflector::WatchTimeout() {
  // Uniform over the whole seconds from min to max, both included.
  const std::int64_t low = options_.min_watch_timeout.count();
  const std::int64_t span = std::max<std::int64_t>(options_.max_watch_timeout.count() - low, 0);
  const auto extra = static_cast<std::int64_t>(static_cast<double>(span + 1) * random_());
  return std::chrono::seconds(low + std::min(extra, span));
}

}  // namespace eoc::kube
