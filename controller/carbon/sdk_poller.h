// The Carbon Aware SDK sources of every pool, polled on threads of their own so that no reconcile
// ever waits on one (a poll may take its whole timeout when the SDK is down).
//
//   SdkPoller poller(*fetcher, {.min_interval = 5min}, 8, RealClock(),
//                    [&](const std::string& url) { /* reconcile the pools that use it */ });
//   poller.Start();
//   poller.Want({{"http://sdk:8080", {"eastus", "westus"}}});   // every URL and its zones
//   if (auto table = poller.Readings("http://sdk:8080")) table->Reading("eastus");
//   poller.Stop();
//
// Each URL is a CarbonAwareSdkSource: asked at once for a zone set it has not been asked for, then
// at most every min_interval, whether the poll succeeded or not. Its table keeps what it read for
// `hold` (give it the longest hold a pool may ask for: each pool applies its own when it takes the
// readings into its table). After each poll the URL's table is published as an immutable copy
// and `changed(url)` is called, on the thread that polled it.
//
// URLs are polled concurrently, at most `max_in_flight` at once (one thread each), so that a
// slow or dead SDK holds one of them for its timeout and no other URL waits for it. Of those, at
// most half (at least one) poll URLs whose last poll failed or that were never polled, so that
// however many SDKs are dead, the other half is free for the URLs that answered their last poll.
// When more URLs are due than may be polled, those that answered their last poll go first, then
// those never polled, then those that failed, each by when it fell due.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "controller/carbon/carbon_aware_sdk.h"
#include "controller/scrape/metrics_fetcher.h"
#include "signals/carbon_intensity.h"

namespace eoc::controller::carbon {

// Polls in flight at once, by default (--carbon-max-in-flight).
inline constexpr std::size_t kCarbonMaxInFlight = 8;

class SdkPoller {
 public:
  using Changed = std::function<void(const std::string& url)>;

  // The fetcher and clock must outlive the poller; `changed` may be empty. The fetcher should
  // allow max_in_flight fetches at once (MakeCarbonFetcher(max_in_flight)), or polls wait in its
  // queue. Throws std::invalid_argument for max_in_flight 0.
  SdkPoller(MetricsFetcher& fetcher, CarbonAwareSdkOptions options, std::size_t max_in_flight,
            const Clock& clock, Changed changed);
  ~SdkPoller();  // Stop()s
  SdkPoller(const SdkPoller&) = delete;
  SdkPoller& operator=(const SdkPoller&) = delete;
  SdkPoller(SdkPoller&&) = delete;
  SdkPoller& operator=(SdkPoller&&) = delete;

  // Starts the max_in_flight polling threads.
  void Start();
  // Returns once the polls in flight have ended (each within the options' timeout).
  void Stop();

  // Every URL to poll and the zones to ask it for; replaces the last set (a URL no longer there is
  // forgotten, readings and all). A URL or zone set not polled before is due at once.
  void Want(std::map<std::string, std::vector<std::string>> zones_by_url);
  // The URL's table as of its last poll; nullptr before its first (or for a URL not wanted).
  std::shared_ptr<const signals::ZoneIntensities> Readings(const std::string& url) const;

  // Polls, one after another on the calling thread, every URL that is due now and may be polled
  // (as one of the threads would); returns when the next is due (Clock::TimePoint::max() with
  // nothing wanted). Tests call it without Start().
  Clock::TimePoint PollDue();

 private:
  // How a URL's last poll went.
  enum class Standing { kAnswered, kNew, kFailed };
  struct Entry {
    std::vector<std::string> zones;
    Clock::TimePoint due = Clock::TimePoint::min();
    Standing standing = Standing::kNew;
    bool in_flight = false;
    // Used only by the thread polling it (in_flight), which holds it while the entry may go.
    std::shared_ptr<CarbonAwareSdkSource> source;
  };
  struct Job {
    std::string url;
    std::vector<std::string> zones;
    std::shared_ptr<CarbonAwareSdkSource> source;
    bool unproven = false;  // counted in unproven_in_flight_
  };

  // Under mu_: the URL to poll at `now`, marked in flight; else nullopt and *next, when one is due
  // next (not counting those that wait for a slot: a poll's end wakes the threads).
  std::optional<Job> TakeLocked(Clock::TimePoint now, Clock::TimePoint* next);
  // Polls `job`'s URL, publishes its table and calls `changed`.
  void Poll(const Job& job);
  void Run();

  MetricsFetcher& fetcher_;
  const CarbonAwareSdkOptions options_;
  const std::size_t max_in_flight_;
  const std::size_t max_unproven_;  // of those, for URLs not answered at their last poll
  const Clock& clock_;
  const Changed changed_;
  Wakeup wake_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::string>> wanted_;                         // guarded
  std::map<std::string, Entry> entries_;                                           // guarded
  std::map<std::string, std::shared_ptr<const signals::ZoneIntensities>> tables_;  // guarded
  std::size_t unproven_in_flight_ = 0;                                             // guarded

  std::vector<std::thread> threads_;
};

}  // namespace eoc::controller::carbon
