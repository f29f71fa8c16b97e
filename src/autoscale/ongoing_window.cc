#include "autoscale/ongoing_window.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace eoc::autoscale {

OngoingWindow::OngoingWindow(double look_back_seconds)
    : look_back_(look_back_seconds), width_(look_back_seconds / kBuckets) {
  if (!(look_back_seconds > 0) || !std::isfinite(look_back_seconds)) {
    throw std::invalid_argument("OngoingWindow: the look-back period must be a positive number");
  }
}

std::int64_t OngoingWindow::IndexOf(double seconds) const {
  return static_cast<std::int64_t>(std::floor(seconds / width_));
}

void OngoingWindow::Record(std::string_view worker, double at_seconds, double ongoing) {
  if (!std::isfinite(ongoing) || ongoing < 0 || !std::isfinite(at_seconds)) return;
  auto it = series_.find(worker);
  if (it == series_.end()) it = series_.emplace(std::string(worker), Series{}).first;
  Series& s = it->second;
  if (!s.buckets.empty() && at_seconds < s.newest) return;
  s.newest = at_seconds;
  const std::int64_t index = IndexOf(at_seconds);
  if (s.buckets.empty() || s.buckets.back().index != index) {
    s.buckets.push_back({.index = index});
  }
  s.buckets.back().sum += ongoing;
  ++s.buckets.back().count;
  // Buckets wholly before the period as seen from this sample can never count again.
  while (s.buckets.front().index < index - static_cast<std::int64_t>(kBuckets)) {
    s.buckets.pop_front();
  }
}

OngoingWindow::Sum OngoingWindow::Over(std::span<const std::string> workers, double now_seconds,
                                       double fresh_within_seconds) const {
  Sum sum;
  // A bucket counts when it ends after the period's start.
  const double start = now_seconds - look_back_;
  for (const std::string& worker : workers) {
    const auto it = series_.find(worker);
    if (it == series_.end() || now_seconds - it->second.newest > fresh_within_seconds) {
      ++sum.missing;
      continue;
    }
    double total = 0;
    std::int64_t count = 0;
    for (const Bucket& b : it->second.buckets) {
      if (static_cast<double>(b.index + 1) * width_ <= start) continue;
      total += b.sum;
      count += b.count;
    }
    if (count == 0) {
      ++sum.missing;
      continue;
    }
    sum.total += total / static_cast<double>(count);
    ++sum.counted;
  }
  return sum;
}

void OngoingWindow::Retain(std::span<const std::string> workers) {
  const std::set<std::string_view> keep(workers.begin(), workers.end());
  std::erase_if(series_, [&](const auto& entry) { return !keep.contains(entry.first); });
}

PolicyInput InputAt(const OngoingWindow& window, std::span<const std::string> ready, double waiting,
                    double now_seconds, double fresh_within_seconds, std::int32_t target) {
  const OngoingWindow::Sum sum = window.Over(ready, now_seconds, fresh_within_seconds);
  PolicyInput in{.now_seconds = now_seconds,
                 .current = static_cast<std::int32_t>(ready.size()),
                 .target = target,
                 .complete = sum.missing == 0};
  if (in.current == 0) {
    in.total = waiting;
  } else if (sum.counted > 0) {
    in.total = sum.total + waiting;
  }
  return in;
}

}  // namespace eoc::autoscale
