// The Carbon Aware SDK sources of every pool, polled on a thread of their own so that no
// reconcile ever waits on one (a poll may take its whole timeout when the SDK is down).
//
//   SdkPoller poller(*fetcher, {.min_interval = 5min}, RealClock(),
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
// and `changed(url)` is called, on the poller's thread. URLs are polled one after another: a dead
// SDK delays the others by at most its timeout per round.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "controller/carbon/carbon_aware_sdk.h"
#include "controller/scrape/metrics_fetcher.h"
#include "signals/carbon_intensity.h"

namespace eoc::controller::carbon {

class SdkPoller {
 public:
  using Changed = std::function<void(const std::string& url)>;

  // The fetcher and clock must outlive the poller; `changed` may be empty.
  SdkPoller(MetricsFetcher& fetcher, CarbonAwareSdkOptions options, const Clock& clock,
            Changed changed);
  ~SdkPoller();  // Stop()s
  SdkPoller(const SdkPoller&) = delete;
  SdkPoller& operator=(const SdkPoller&) = delete;
  SdkPoller(SdkPoller&&) = delete;
  SdkPoller& operator=(SdkPoller&&) = delete;

  void Start();
  // Returns once a poll in flight has ended (within the options' timeout).
  void Stop();

  // Every URL to poll and the zones to ask it for; replaces the last set (a URL no longer there is
  // forgotten, readings and all). A URL or zone set not polled before is polled at once.
  void Want(std::map<std::string, std::vector<std::string>> zones_by_url);
  // The URL's table as of its last poll; nullptr before its first (or for a URL not wanted).
  std::shared_ptr<const signals::ZoneIntensities> Readings(const std::string& url) const;

  // Runs one round on the calling thread: polls every URL that is due; returns when the next is
  // due (Clock::TimePoint::max() with nothing wanted). Start()'s thread sleeps until then; tests
  // call it without Start().
  Clock::TimePoint PollDue();

 private:
  void Run();

  MetricsFetcher& fetcher_;
  const CarbonAwareSdkOptions options_;
  const Clock& clock_;
  const Changed changed_;
  Wakeup wake_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::string>> wanted_;                         // guarded
  std::map<std::string, std::shared_ptr<const signals::ZoneIntensities>> tables_;  // guarded

  // The poller thread's own (PollDue's caller's): one source per URL.
  std::map<std::string, std::unique_ptr<CarbonAwareSdkSource>> sources_;
  std::thread thread_;
};

}  // namespace eoc::controller::carbon
