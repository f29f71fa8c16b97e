// client-go's EventCorrelator: folds repeats of one Event into a count (a PATCH of the Event
// already written), combines bursts of similar events that differ only by message, and drops spam
// with a token bucket per source and object. Its three caches are bounded LRU maps.
//
// Differences from client-go, on purpose: an exact repeat is folded into the existing Event only
// within dedup_interval (10 minutes) of the previous one (client-go folds for as long as the
// cache remembers it); keys are joined with a separator, so that ("ab", "c") and ("a", "bc")
// differ.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>

#include "common/clock.h"
#include "common/lru_map.h"
#include "kube/event.h"

namespace eoc::kube {

struct EventCorrelatorOptions {
  std::size_t cache_size = 4096;  // entries in each of the three caches
  // Spam filter, per source and object: `spam_burst` writes, then one per `spam_refill`.
  int spam_burst = 25;
  std::chrono::seconds spam_refill{300};
  // An exact repeat within this interval updates the existing Event; so does a similar one
  // within it once `aggregate_max_events` distinct messages have been seen.
  std::chrono::seconds dedup_interval{600};
  int aggregate_max_events = 10;
};

// What to do with one recorded event.
struct CorrelationResult {
  Event event;
  bool skip = false;    // the spam filter dropped it
  bool update = false;  // PATCH the existing Event event.name with `patch` (count > 1)
  nlohmann::json patch;
  bool combined = false;  // a "(combined from similar events)" Event
  std::string key;        // for UpdateState
};

// client-go's EventCorrelator: aggregation of similar events, counting of repeats, spam filter.
// Not thread-safe: the recorder's writer thread owns it.
class EventCorrelator {
 public:
  explicit EventCorrelator(const Clock& clock, EventCorrelatorOptions options = {});

  CorrelationResult Correlate(Event event);
  // What the server answered for a write of result `key`: its name, resourceVersion and count.
  void UpdateState(const std::string& key, const Event& written);

 private:
  struct AggregateRecord {
    std::unordered_set<std::size_t> messages;  // hashes, so long messages cost no memory
    std::chrono::steady_clock::time_point last;
  };
  struct Observation {
    std::int32_t count = 0;
    std::chrono::system_clock::time_point first_timestamp;
    std::string name;
    std::string resource_version;
    std::chrono::steady_clock::time_point last;
  };
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point last;
  };

  // Sets the event to write (maybe a combined one) and its cache key.
  void Aggregate(CorrelationResult& result);
  // Turns a repeat into an update of the Event already written.
  void Observe(CorrelationResult& result);
  bool AllowedBySpamFilter(const Event& event);
  std::string UniqueName(const std::string& object_name);

  const Clock& clock_;
  const EventCorrelatorOptions options_;
  LruMap<std::string, AggregateRecord> aggregates_;
  LruMap<std::string, Observation> observations_;
  LruMap<std::string, Bucket> buckets_;
  std::int64_t last_name_nanos_ = 0;
};

}  // namespace eoc::kube
