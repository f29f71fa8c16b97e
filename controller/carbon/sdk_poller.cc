#include "controller/carbon/sdk_poller.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace eoc::controller::carbon {

SdkPoller::SdkPoller(MetricsFetcher& fetcher, CarbonAwareSdkOptions options,
                     std::size_t max_in_flight, const Clock& clock, Changed changed)
    : fetcher_(fetcher),
      options_(std::move(options)),
      max_in_flight_(max_in_flight),
      max_unproven_(std::max<std::size_t>(1, max_in_flight / 2)),
      clock_(clock),
      changed_(std::move(changed)),
      wake_(clock) {
  if (max_in_flight == 0)
    throw std::invalid_argument("SdkPoller: max_in_flight must be at least 1");
}

SdkPoller::~SdkPoller() { Stop(); }

void SdkPoller::Start() {
  if (!threads_.empty() || stopping_) return;
  for (std::size_t i = 0; i < max_in_flight_; ++i) threads_.emplace_back([this] { Run(); });
}

void SdkPoller::Stop() {
  stopping_ = true;
  wake_.Notify();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
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
    std::erase_if(entries_, [&](const auto& e) { return !wanted_.contains(e.first); });
    for (const auto& [url, zones] : wanted_) {
      Entry& entry = entries_[url];
      if (entry.zones == zones) continue;
      entry.zones = zones;
      entry.due = Clock::TimePoint::min();  // a new zone set is asked at once
    }
  }
  wake_.Notify();
}

std::shared_ptr<const signals::ZoneIntensities> SdkPoller::Readings(const std::string& url) const {
  const std::lock_guard lock(mu_);
  const auto it = tables_.find(url);
  return it == tables_.end() ? nullptr : it->second;
}

std::optional<SdkPoller::Job> SdkPoller::TakeLocked(Clock::TimePoint now, Clock::TimePoint* next) {
  *next = Clock::TimePoint::max();
  const bool unproven_room = unproven_in_flight_ < max_unproven_;
  auto best = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const Entry& e = it->second;
    if (e.in_flight) continue;
    const bool unproven = e.standing != Standing::kAnswered;
    if (unproven && !unproven_room) continue;  // a poll's end wakes the threads
    if (e.due > now) {
      *next = std::min(*next, e.due);
      continue;
    }
    if (best == entries_.end() ||
        std::tie(e.standing, e.due) < std::tie(best->second.standing, best->second.due)) {
      best = it;
    }
  }
  if (best == entries_.end()) return std::nullopt;
  Entry& e = best->second;
  e.in_flight = true;
  if (!e.source) e.source = std::make_shared<CarbonAwareSdkSource>(fetcher_, options_);
  Job job{.url = best->first,
          .zones = e.zones,
          .source = e.source,
          .unproven = e.standing != Standing::kAnswered};
  if (job.unproven) ++unproven_in_flight_;
  return job;
}

void SdkPoller::Poll(const Job& job) {
  const bool polled = job.source->Poll(job.url, job.zones, clock_.Now());
  const auto due = job.source->schedule().NextDue(signals::PollKey(job.url, job.zones));
  bool published = false;
  {
    const std::lock_guard lock(mu_);
    if (job.unproven) --unproven_in_flight_;
    const auto it = entries_.find(job.url);
    // Forgotten while it was polled (and maybe wanted again since, with a source of its own).
    if (it != entries_.end() && it->second.source == job.source) {
      Entry& e = it->second;
      e.in_flight = false;
      // Every source has been attempted once Poll returns, so it has a next due time; a zone set
      // changed meanwhile stays due at once.
      if (e.zones == job.zones && due) e.due = *due;
      if (polled) {
        e.standing = job.source->answered() ? Standing::kAnswered : Standing::kFailed;
        tables_[job.url] =
            std::make_shared<const signals::ZoneIntensities>(job.source->intensities());
        published = true;
      }
    }
  }
  wake_.Notify();  // a slot is free, and the entry due again
  if (published && changed_) changed_(job.url);
}

Clock::TimePoint SdkPoller::PollDue() {
  const Clock::TimePoint now = clock_.Now();
  Clock::TimePoint next = Clock::TimePoint::max();
  while (!stopping_) {
    std::optional<Job> job;
    {
      const std::lock_guard lock(mu_);
      job = TakeLocked(now, &next);
    }
    if (!job) break;
    Poll(*job);
  }
  return next;
}

void SdkPoller::Run() {
  while (!stopping_) {
    const Wakeup::Ticket ticket = wake_.TakeTicket();
    Clock::TimePoint next = Clock::TimePoint::max();
    std::optional<Job> job;
    {
      const std::lock_guard lock(mu_);
      job = TakeLocked(clock_.Now(), &next);
    }
    if (job) {
      Poll(*job);
    } else {
      wake_.SleepUntilNotified(next, ticket);
    }
  }
}

}  // namespace eoc::controller::carbon
