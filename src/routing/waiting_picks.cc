#include "routing/waiting_picks.h"

#include <algorithm>
#include <utility>

namespace eoc::routing {

PickRequest WaitingPicks::Waiter::Request() const {
  return {.model = model,
          .session = session,
          .prefix = prefix,
          .prompt_tokens = prompt_tokens,
          .expected_tokens = expected_tokens};
}

WaitingPicks::Admitted WaitingPicks::Admit(const PickRequest& request, std::uint64_t random,
                                           PickCallback done, TimePoint deadline, TimePoint now) {
  const auto prefix = request.prefix.first(std::min(request.prefix.size(), kMaxPrefixBlocks));
  Waiter waiter{.model = std::string(request.model),
                .session = request.session,
                .prefix = std::vector<BlockHash>(prefix.begin(), prefix.end()),
                .prompt_tokens = request.prompt_tokens,
                .expected_tokens = request.expected_tokens,
                .random = random,
                .queued_at = now,
                .done = std::move(done)};
  // Counted before it can be released (by another thread, at once), uncounted if refused.
  Count(waiter, 1);
  Admitted admitted = queue_.Admit(std::move(waiter), deadline, now);
  if (admitted.admission != Admission::kQueued) Count(*admitted.rejected, -1);
  return admitted;
}

bool WaitingPicks::Cancel(WaitQueue<Waiter>::Ticket ticket) {
  auto waiter = queue_.Cancel(ticket);
  if (!waiter) return false;
  Count(*waiter, -1);
  return true;
}

std::vector<WaitingPicks::Waiter> WaitingPicks::Expire(TimePoint now) {
  return Uncount(queue_.Expire(now));
}

std::vector<WaitingPicks::Waiter> WaitingPicks::Close() { return Uncount(queue_.Close()); }

void WaitingPicks::Open() { queue_.Open(); }

bool WaitingPicks::Holds(std::string_view model, TimePoint now,
                         std::chrono::nanoseconds hold) const {
  if (queue_.Size() == 0) return false;
  const std::lock_guard lock(mu_);
  const auto it = models_.find(model);
  return it != models_.end() && now - *it->second.begin() < hold;
}

std::size_t WaitingPicks::KeptBytes() const {
  const std::lock_guard lock(mu_);
  return kept_bytes_;
}

void WaitingPicks::Answer(const std::vector<Waiter>& waiters, PickStatus status) {
  for (const Waiter& waiter : waiters) {
    if (!waiter.done) continue;
    if (status == PickStatus::kPicked) {
      waiter.done(waiter.outcome);
    } else {
      waiter.done(PickOutcome{.status = status});
    }
  }
}

void WaitingPicks::Count(const Waiter& waiter, std::ptrdiff_t delta) {
  const std::lock_guard lock(mu_);
  kept_bytes_ = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(kept_bytes_) +
                                         delta * static_cast<std::ptrdiff_t>(waiter.KeptBytes()));
  auto it = models_.try_emplace(waiter.model).first;
  if (delta > 0) {
    it->second.insert(waiter.queued_at);
  } else {
    it->second.erase(it->second.find(waiter.queued_at));
    if (it->second.empty()) models_.erase(it);
  }
}

std::vector<WaitingPicks::Waiter> WaitingPicks::Uncount(std::vector<Waiter> waiters) {
  for (const Waiter& waiter : waiters) Count(waiter, -1);
  return waiters;
}

}  // namespace eoc::routing
