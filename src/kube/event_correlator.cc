#include "kube/event_correlator.h"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <string_view>

#include "common/rfc3339.h"

namespace eoc::kube {
namespace {

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

}  // namespace

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

}  // namespace eoc::kube
