#include "kube/event_recorder.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <random>

#include "common/rfc3339.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using std::chrono::steady_clock;

// What an Event name may hold (a DNS subdomain), and what the ".<16 hex>" suffix takes of it.
constexpr std::size_t kMaxNameBytes = 253;
constexpr std::size_t kNameSuffixBytes = 17;

// Cuts `text` to at most `max` bytes without splitting a UTF-8 sequence.
std::string Truncated(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) --cut;
  return std::string(text.substr(0, cut));
}

// Joined with a separator that names and reasons do not contain, so that keys cannot collide by
// shifting text from one field to the next.
std::string Join(std::initializer_list<std::string_view> parts) {
  std::string key;
  for (const auto part : parts) {
    key.append(part);
    key.push_back('\x1f');
  }
  return key;
}

// Source and object: the spam filter's unit.
std::string SpamKey(const Event& e) {
  const ObjectReference& o = e.involved;
  return Join({e.component, e.host, o.kind, o.ns, o.name, o.uid, o.api_version});
}

// Similar events: the same source, object, type and reason; the message may differ.
std::string AggregateKey(const Event& e) { return Join({SpamKey(e), ToString(e.type), e.reason}); }

// The same event exactly.
std::string EventKey(const Event& e) { return Join({AggregateKey(e), e.message}); }

json ReferenceJson(const ObjectReference& o) {
  json ref = json::object();
  const auto set = [&ref](const char* key, const std::string& value) {
    if (!value.empty()) ref[key] = value;
  };
  set("kind", o.kind);
  set("namespace", o.ns);
  set("name", o.name);
  set("uid", o.uid);
  set("apiVersion", o.api_version);
  set("resourceVersion", o.resource_version);
  return ref;
}

bool Retryable(const Status& error) {
  // No answer at all, or the server (or a proxy) failing: the write itself may be fine.
  return error.IsTransport() || error.code >= 500 || error.IsTooManyRequests();
}

}  // namespace

const char* ToString(EventType type) { return type == EventType::kWarning ? "Warning" : "Normal"; }

json Event::ToJson() const {
  json metadata = {{"name", name}, {"namespace", ns}};
  if (!resource_version.empty()) metadata["resourceVersion"] = resource_version;
  json source = {{"component", component}};
  if (!host.empty()) source["host"] = host;
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", std::move(metadata)},
                {"involvedObject", ReferenceJson(involved)},
                {"type", ToString(type)},
                {"reason", reason},
                {"message", message},
                {"source", std::move(source)},
                {"count", count},
                {"firstTimestamp", FormatRfc3339(first_timestamp)},
                {"lastTimestamp", FormatRfc3339(last_timestamp)},
                {"reportingComponent", component}};
  if (!host.empty()) event["reportingInstance"] = host;
  return event;
}

std::string EventName(const std::string& object_name, std::int64_t unix_nanos) {
  std::array<char, kNameSuffixBytes + 1> suffix{};
  std::snprintf(suffix.data(), suffix.size(), ".%016llx",
                static_cast<unsigned long long>(unix_nanos));
  return object_name.substr(0, kMaxNameBytes - kNameSuffixBytes) + suffix.data();
}

// ---- EventCorrelator ----

EventCorrelator::EventCorrelator(const Clock& clock, EventCorrelatorOptions options)
    : clock_(clock),
      options_(options),
      aggregates_(std::max<std::size_t>(options.cache_size, 1)),  // Put needs room for one
      observations_(std::max<std::size_t>(options.cache_size, 1)),
      buckets_(std::max<std::size_t>(options.cache_size, 1)) {}

CorrelationResult EventCorrelator::Correlate(Event event) {
  CorrelationResult result;
  result.event = std::move(event);
  Aggregate(result);
  Observe(result);
  // As client-go, the filter runs after counting: a dropped repeat still counts, so the next
  // write that gets through carries the true count.
  result.skip = !AllowedBySpamFilter(result.event);
  return result;
}

void EventCorrelator::Aggregate(CorrelationResult& result) {
  Event& e = result.event;
  const auto now = clock_.Now();
  const std::string key = AggregateKey(e);
  AggregateRecord* record = aggregates_.Touch(key);
  if (record == nullptr || now - record->last > options_.dedup_interval) {
    record = &aggregates_.Put(key, AggregateRecord{});
  }
  record->messages.insert(std::hash<std::string>{}(e.message));
  record->last = now;
  if (record->messages.size() < static_cast<std::size_t>(options_.aggregate_max_events)) {
    result.key = EventKey(e);
    return;
  }
  // Keep the set from growing past the threshold (client-go's PopAny).
  record->messages.erase(record->messages.begin());
  e.message = "(combined from similar events): " + e.message;
  result.key = key;
  result.combined = true;
}

void EventCorrelator::Observe(CorrelationResult& result) {
  Event& e = result.event;
  const auto now = clock_.Now();
  const Observation* prior = observations_.Touch(result.key);
  if (prior != nullptr && prior->count > 0 && now - prior->last <= options_.dedup_interval) {
    e.name = prior->name;
    e.resource_version = prior->resource_version;
    e.first_timestamp = prior->first_timestamp;
    e.count = prior->count + 1;
    result.update = true;
    result.patch = {{"count", e.count},
                    {"lastTimestamp", FormatRfc3339(e.last_timestamp)},
                    {"message", e.message}};
  } else {
    e.name = UniqueName(e.involved.name);
    e.count = 1;
    e.first_timestamp = e.last_timestamp;
  }
  observations_.Put(result.key,
                    Observation{e.count, e.first_timestamp, e.name, e.resource_version, now});
}

void EventCorrelator::UpdateState(const std::string& key, const Event& written) {
  Observation* o = observations_.Touch(key);
  if (o == nullptr) {
    observations_.Put(key, Observation{written.count, written.first_timestamp, written.name,
                                       written.resource_version, clock_.Now()});
    return;
  }
  o->count = written.count;
  o->name = written.name;
  o->resource_version = written.resource_version;
}

bool EventCorrelator::AllowedBySpamFilter(const Event& event) {
  const auto now = clock_.Now();
  const std::string key = SpamKey(event);
  const auto burst = static_cast<double>(options_.spam_burst);
  Bucket* bucket = buckets_.Touch(key);
  if (bucket == nullptr) bucket = &buckets_.Put(key, Bucket{burst, now});
  if (options_.spam_refill.count() <= 0) {
    bucket->tokens = burst;
  } else {
    const std::chrono::duration<double> elapsed = now - bucket->last;
    const std::chrono::duration<double> refill = options_.spam_refill;
    bucket->tokens = std::min(burst, bucket->tokens + elapsed / refill);
  }
  bucket->last = now;
  if (bucket->tokens < 1) return false;
  bucket->tokens -= 1;
  return true;
}

// Names from the recording time in ns, made strictly increasing so two events of one object in
// the same nanosecond (or under a coarse clock) still get distinct names.
std::string EventCorrelator::UniqueName(const std::string& object_name) {
  const std::int64_t nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.WallNow().time_since_epoch())
          .count();
  last_name_nanos_ = std::max(nanos, last_name_nanos_ + 1);
  return EventName(object_name, last_name_nanos_);
}

// ---- EventRecorder ----

EventRecorder::EventRecorder(Client& client, EventRecorderOptions options, EventRecorderDeps deps)
    : client_(client),
      options_(std::move(options)),
      clock_(deps.clock != nullptr ? *deps.clock : RealClock()),
      metrics_(deps.metrics),
      fence_(std::move(deps.fence)),
      correlator_(clock_, options_.correlator),
      wake_(clock_),
      random_(deps.random ? std::move(deps.random) : SeededRandom(std::random_device{}())),
      thread_([this] { Run(); }) {}

EventRecorder::~EventRecorder() { Stop(); }

void EventRecorder::Record(const ObjectReference& object, EventType type, std::string_view reason,
                           std::string_view message) {
  if (object.name.empty()) {
    Drop(EventDropReason::kInvalid);
    return;
  }
  Event event;
  event.involved = object;
  event.ns = object.ns.empty() ? "default" : object.ns;
  event.type = type;
  event.reason = std::string(reason);
  event.message = Truncated(message, options_.max_message_bytes);
  event.component = options_.component;
  event.host = options_.host;
  event.first_timestamp = event.last_timestamp = clock_.WallNow();
  EventDropReason refused = EventDropReason::kQueueFull;
  {
    std::unique_lock lock(mu_);
    if (!stopping_ && queue_.size() < options_.queue_capacity) {
      queue_.push_back(std::move(event));
      lock.unlock();
      wake_.Notify();
      return;
    }
    if (stopping_) refused = EventDropReason::kStopped;
  }
  Drop(refused);
}

bool EventRecorder::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return queue_.empty() && !busy_; });
}

void EventRecorder::Stop() {
  {
    const std::lock_guard lock(mu_);
    if (!stopping_) drain_deadline_ = clock_.Now() + options_.drain_timeout;
    stopping_ = true;
  }
  wake_.Notify();
  if (thread_.joinable()) thread_.join();
}

EventRecorder::Stats EventRecorder::stats() const {
  const std::lock_guard lock(mu_);
  return stats_;
}

void EventRecorder::Run() {
  Event event;
  while (Next(event)) {
    Process(std::move(event));
    {
      const std::lock_guard lock(mu_);
      busy_ = false;
    }
    idle_.notify_all();
  }
  idle_.notify_all();
}

bool EventRecorder::Next(Event& event) {
  std::unique_lock lock(mu_, std::defer_lock);
  for (;;) {
    // The ticket before looking, so that a Record() or Stop() meanwhile is not missed.
    const Wakeup::Ticket ticket = wake_.TakeTicket();
    lock.lock();
    if (stopping_ || !queue_.empty()) break;
    lock.unlock();
    wake_.SleepUntilNotified(Clock::TimePoint::max(), ticket);
  }
  if (queue_.empty()) return false;
  if (stopping_ && clock_.Now() >= drain_deadline_) {
    const std::size_t left = queue_.size();
    queue_.clear();
    lock.unlock();
    for (std::size_t i = 0; i < left; ++i) Drop(EventDropReason::kStopped);
    return false;
  }
  event = std::move(queue_.front());
  queue_.pop_front();
  busy_ = true;
  return true;
}

void EventRecorder::Process(Event event) {
  const CorrelationResult result = correlator_.Correlate(std::move(event));
  if (result.skip) {
    Drop(EventDropReason::kSpam);
    return;
  }
  WriteWithRetries(result);
}

void EventRecorder::WriteWithRetries(const CorrelationResult& result) {
  for (int attempt = 1;; ++attempt) {
    if (WriteOnce(result) == Outcome::kDone) return;
    if (attempt >= options_.max_tries || Stopping()) break;
    // The first wait is randomised, as client-go, so recorders that lost the API server together
    // do not come back in step.
    const std::chrono::nanoseconds delay = options_.retry_delay;
    if (!WaitUnlessStopped(attempt == 1 ? Spread(delay, random_()) : delay)) break;
  }
  Drop(EventDropReason::kWriteFailed);
}

EventRecorder::Outcome EventRecorder::WriteOnce(const CorrelationResult& result) {
  if (!MayWrite(fence_)) {
    Drop(EventDropReason::kNotLeader);
    return Outcome::kDone;
  }
  const Event& e = result.event;
  if (result.update) {
    auto patched =
        client_.Patch(resources::kEvents, e.ns, e.name, PatchType::kStrategicMerge, result.patch);
    if (patched) {
      Written(result, *patched, true);
      return Outcome::kDone;
    }
    // Gone (the server's event TTL, or deleted): write it anew under the same name.
    if (!patched.error().IsNotFound()) return Failed(patched.error());
  }
  json body = e.ToJson();
  body["metadata"].erase("resourceVersion");
  auto created = client_.Create(resources::kEvents, e.ns, body);
  if (!created) return Failed(created.error());
  Written(result, *created, false);
  return Outcome::kDone;
}

EventRecorder::Outcome EventRecorder::Failed(const Status& error) {
  if (metrics_ != nullptr) metrics_->OnWriteError(error);
  if (Retryable(error)) return Outcome::kRetry;
  // Refused (invalid, forbidden, namespace terminating, already exists): the same request would
  // be refused again.
  Drop(EventDropReason::kInvalid);
  return Outcome::kDone;
}

void EventRecorder::Written(const CorrelationResult& result, const json& answer, bool patched) {
  Event written = result.event;
  written.resource_version.clear();
  // The server's name, version and count; an answer without them (never seen) keeps ours.
  if (answer.is_object()) {
    written.count = answer.value("count", written.count);
    const auto metadata = answer.find("metadata");
    if (metadata != answer.end() && metadata->is_object()) {
      written.name = metadata->value("name", written.name);
      written.resource_version = metadata->value("resourceVersion", std::string());
    }
  }
  correlator_.UpdateState(result.key, written);
  {
    const std::lock_guard lock(mu_);
    ++stats_.written;
    if (patched) ++stats_.aggregated;
  }
  if (metrics_ != nullptr) {
    metrics_->OnEventWritten();
    if (patched) metrics_->OnEventAggregated();
  }
}

void EventRecorder::Drop(EventDropReason reason) {
  {
    const std::lock_guard lock(mu_);
    ++stats_.dropped;
  }
  if (metrics_ != nullptr) metrics_->OnEventDropped(reason);
}

bool EventRecorder::Stopping() const { return stopping_.load(); }

bool EventRecorder::WaitUnlessStopped(std::chrono::nanoseconds d) {
  return !wake_.SleepFor(d, [this] { return stopping_.load(); });
}

}  // namespace eoc::kube
