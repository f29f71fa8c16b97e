// Demand from every replica: a pick waits on whichever replica received it, so each replica
// reports the picks waiting in its queue for each pool where the leader's autoscaler reads them,
// in an annotation of the pool, `eoc.dev/demand-<replica>: "<count> <RFC 3339 time>"`.
//
//   DemandReporter reporter(client, directory, replica, RealClock());   // every replica
//   reporter.Start();
//   DemandReadings readings;                                              // the leader's scaler
//   auto reading = readings.Observe(key, object.demand, own_key, clock.Now(), clock.WallNow());
//
// The reporter writes a pool's annotation at most once a second, when its count changed, and
// again every heartbeat (2 s) while it is not zero, so that a standing queue stays fresh; it
// writes 0 once when the queue empties, and removes its annotations when it stops. The leader
// adds the reports whose value it saw change within the last kDemandFresh (its own clock, so
// replicas' clocks may differ; a report it sees for the first time counts if its own time is
// that recent), leaves its own out (it counts its queue directly), and removes
// reports unchanged for kDemandForgotten (a replica that died), so the annotations stay bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "kube/client.h"
#include "routing/pool_directory.h"

namespace eoc::controller {

inline constexpr std::string_view kDemandAnnotationPrefix = "eoc.dev/demand-";
inline constexpr std::chrono::seconds kDemandFresh{5};
inline constexpr std::chrono::minutes kDemandForgotten{10};
// The largest count a report may carry: it counts one replica's waiting picks for one pool,
// which the pool's queue bounds by its maxQueue, at most 1,000,000 (the CRD's bound).
inline constexpr std::int64_t kMaxDemandCount = 1'000'000;

// The annotation key of `replica`'s reports: the prefix and the replica's name made a valid
// annotation name (lower case letters, digits, '-' and '.'; at most 63 characters, a longer name
// shortened and made unique by a hash).
std::string DemandAnnotationKey(std::string_view replica);
// "<count> <time>" -> count; nullopt for anything else, a count over kMaxDemandCount included.
std::optional<std::int64_t> ParseDemandCount(std::string_view value);
std::string FormatDemand(std::int64_t count, const std::string& rfc3339);

// The pool's demand annotations (key -> value) from its object.
std::map<std::string, std::string> DemandAnnotations(const nlohmann::json& pool);

struct DemandReporterOptions {
  std::chrono::milliseconds period{250};      // how often the queues are looked at
  std::chrono::milliseconds min_gap{1000};    // between two writes for one pool
  std::chrono::milliseconds heartbeat{2000};  // rewrites while picks wait
};

// Every replica: writes its waiting picks per pool. Thread-safe.
class DemandReporter {
 public:
  DemandReporter(kube::Client& client, routing::PoolDirectory& directory,
                 const std::string& replica, const Clock& clock,
                 DemandReporterOptions options = {});
  ~DemandReporter();  // Stop()s
  DemandReporter(const DemandReporter&) = delete;
  DemandReporter& operator=(const DemandReporter&) = delete;
  DemandReporter(DemandReporter&&) = delete;
  DemandReporter& operator=(DemandReporter&&) = delete;

  void Start();
  // Stops the loop and removes the annotations it wrote.
  void Stop();
  // One look at every pool's queue (the loop's body; tests call it).
  void RunOnce();

 private:
  struct Written {
    std::int64_t count = 0;
    Clock::TimePoint at;
  };
  bool Write(const std::string& key, const nlohmann::json& value);

  kube::Client& client_;
  routing::PoolDirectory& directory_;
  const std::string annotation_;
  const Clock& clock_;
  const DemandReporterOptions options_;
  std::map<std::string, Written> written_;  // by pool key; the loop's only
  std::atomic<bool> stopping_{false};
  Wakeup wake_;
  std::thread thread_;
};

// The leader: what the other replicas' reports add up to, per pool. Thread-safe.
class DemandReadings {
 public:
  struct Reading {
    std::int64_t waiting = 0;          // the fresh reports' sum
    std::vector<std::string> expired;  // annotation keys unchanged for kDemandForgotten
  };
  // `annotations`: the pool's demand annotations as the cache has them now; `own`: this
  // replica's key (left out); `now` and `wall_now`: this replica's clocks.
  Reading Observe(const std::string& pool_key,
                  const std::map<std::string, std::string>& annotations, const std::string& own,
                  Clock::TimePoint now, std::chrono::system_clock::time_point wall_now);
  void Forget(const std::string& pool_key);

 private:
  struct Seen {
    std::string value;
    Clock::TimePoint changed;
  };
  std::mutex mu_;
  std::map<std::string, std::map<std::string, Seen>> pools_;  // pool -> key -> seen
};

}  // namespace eoc::controller
