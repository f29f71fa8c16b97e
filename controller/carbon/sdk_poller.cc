#include "controller/carbon/sdk_poller.h"

#include <algorithm>
#include <utility>

namespace eoc::controller::carbon {

SdkPoller::SdkPoller(MetricsFetcher& fetcher, CarbonAwareSdkOptions options, const Clock& clock,
                     Changed changed)
    : fetcher_(fetcher),
      options_(std::move(options)),
      clock_(clock),
      changed_(std::move(changed)),
      wake_(clock) {}

SdkPoller::~SdkPoller() { Stop(); }

void SdkPoller::Start() {
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
}

void SdkPoller::Stop() {
  stopping_ = true;
  wake_.Notify();
  if (thread_.joinable()) thread_.join();
}

void SdkPoller::Want(std::map<std::string, std::vector<std::string>> zones_by_url) {
  for (auto& [url, zones] : zones_by_url) {
    std::sort(zones.begin(), zones.end());
    zones.erase(std::unique(zones.begin(), zones.end()), zones.end());
  }
  {
    const std::lock_guard lock(mu_);
    if (zones_by_url == wanted_) return;
    wanted_ = std::move(zones_by_url);
    std::erase_if(tables_, [&](const auto& t) { return !wanted_.contains(t.first); });
  }
  wake_.Notify();
}

std::shared_ptr<const signals::ZoneIntensities> SdkPoller::Readings(const std::string& url) const {
  const std::lock_guard lock(mu_);
  const auto it = tables_.find(url);
  return it == tables_.end() ? nullptr : it->second;
}

Clock::TimePoint SdkPoller::PollDue() {
  std::map<std::string, std::vector<std::string>> wanted;
  {
    const std::lock_guard lock(mu_);
    wanted = wanted_;
  }
  std::erase_if(sources_, [&](const auto& s) { return !wanted.contains(s.first); });
  Clock::TimePoint next = Clock::TimePoint::max();
  for (const auto& [url, zones] : wanted) {
    if (stopping_) break;
    auto& source = sources_[url];
    if (!source) source = std::make_unique<CarbonAwareSdkSource>(fetcher_, options_);
    const bool polled = source->Poll(url, zones, clock_.Now());
    // Every source has been attempted once Poll returns, so it has a next due time.
    next = std::min(next, source->schedule().NextDue(signals::PollKey(url, zones)).value_or(next));
    if (!polled) continue;
    {
      const std::lock_guard lock(mu_);
      if (!wanted_.contains(url)) continue;  // forgotten while it was polled
      tables_[url] = std::make_shared<const signals::ZoneIntensities>(source->intensities());
    }
    if (changed_) changed_(url);
  }
  return next;
}

void SdkPoller::Run() {
  while (!stopping_) {
    const Wakeup::Ticket ticket = wake_.TakeTicket();
    wake_.SleepUntilNotified(PollDue(), ticket);
  }
}

}  // namespace eoc::controller::carbon
