// Ongoing requests over the look-back period, as the policy's `total` reads them (Ray Serve's
// replica queue-length metric): per worker, the mean of its samples (running + waiting, one a
// scrape) in the period; the pool's total, the sum of those means over its ready workers. Pure:
// time passed in, in seconds as the policy takes it.
//
//   OngoingWindow window(30);                       // lookBackPeriodSeconds
//   window.Record("pod-a", now, running + waiting);  // each scrape of each worker
//   OngoingWindow::Sum s = window.Over(ready_pods, now, /*fresh_within_seconds=*/15);
//   policy_input.total = s.counted > 0 ? std::optional(s.total) : std::nullopt;
//   policy_input.complete = s.missing == 0;
//   window.Retain(ready_pods);                      // forget the workers that left
//
// Bounded whatever the period: each worker keeps its samples in kBuckets time buckets of
// period / kBuckets seconds (sum and count), so the period is honoured to within one bucket (a
// bucket counts when any of it is inside), and a long period at a fast scrape costs no more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "autoscale/policy.h"

namespace eoc::autoscale {

class OngoingWindow {
 public:
  static constexpr std::size_t kBuckets = 64;

  // `look_back_seconds` > 0.
  explicit OngoingWindow(double look_back_seconds);

  double look_back_seconds() const { return look_back_; }

  // A sample of `worker` at `at_seconds` (not before its previous one; an earlier sample is
  // dropped). Negative or non-finite values are dropped: they are not a load.
  void Record(std::string_view worker, double at_seconds, double ongoing);

  struct Sum {
    double total = 0;          // the sum of the counted workers' means
    std::int32_t counted = 0;  // workers with a fresh sample
    std::int32_t missing = 0;  // workers asked for without one
  };
  // Over `workers` at `now_seconds`: a worker counts when its newest sample is at most
  // `fresh_within_seconds` old and its mean is over the samples in the period.
  Sum Over(std::span<const std::string> workers, double now_seconds,
           double fresh_within_seconds) const;

  // Forgets every worker not in `workers`.
  void Retain(std::span<const std::string> workers);
  std::size_t workers() const { return series_.size(); }

 private:
  struct Bucket {
    std::int64_t index = 0;  // floor(time / width)
    double sum = 0;
    std::int64_t count = 0;
  };
  struct Series {
    std::deque<Bucket> buckets;  // oldest first, at most kBuckets + 1
    double newest = 0;
  };

  std::int64_t IndexOf(double seconds) const;

  double look_back_;
  double width_;
  std::map<std::string, Series, std::less<>> series_;
};

// The policy's input for a tick at `now_seconds` with `ready` workers: current is their number;
// total the window's sum over those with a sample fresh within `fresh_within_seconds`, plus the
// `waiting` picks queued on every replica (with no ready worker, `waiting` alone; nullopt when no
// ready worker has a fresh sample); complete when none lacks one. What the controller's
// autoscaler and the simulator give the policy.
PolicyInput InputAt(const OngoingWindow& window, std::span<const std::string> ready, double waiting,
                    double now_seconds, double fresh_within_seconds, std::int32_t target);

}  // namespace eoc::autoscale
