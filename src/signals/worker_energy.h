// One worker's energy, scrape by scrape: its watts from each reading of an energy exporter (the
// rate of the joules counter over the interval when the reading has one, the better figure as it
// averages the whole interval and survives resets; else, or when the counter stood still while the
// gauge shows a draw, the watts gauge), and its marginal joules per token (MarginalEnergy over
// those watts and the worker's token rate of the same interval). Time is passed in, never read.
// Pure.
//
//   WorkerEnergy energy(worker.profile);
//   energy.Observe(now, pod_energy, load.tokens_per_second);  // each scrape with a reading
//   energy.Miss();                                            // a scrape without one
//   energy.watts()                      // std::optional<double>: the last reading's
//   load.marginal_joules_per_token = energy.marginal().joules_per_token();  // 0: the profile's
#pragma once

#include <chrono>
#include <optional>

#include "common/routing_terms.h"
#include "signals/counter_rate.h"
#include "signals/energy_metrics.h"
#include "signals/marginal_energy.h"

namespace eoc::signals {

class WorkerEnergy {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit WorkerEnergy(const EnergyProfile& profile = {}) : marginal_(profile) {}

  // One reading of the worker's power at `at`; `tokens_per_second` is its token rate over the
  // interval that ends at `at` (nullopt: unknown, so the watts are kept but give no point of the
  // slope). A reading with neither figure, or whose counter gives no rate yet and which has no
  // gauge, leaves watts() unknown.
  void Observe(TimePoint at, const PodEnergy& reading, std::optional<double> tokens_per_second);
  // A scrape without a reading: watts() becomes unknown, and the counter's next value starts
  // afresh (a rate over the gap would not match the token rate of the interval). The slope's
  // window is kept: its scrapes still age out.
  void Miss();

  std::optional<double> watts() const { return watts_; }
  // Where the last reading came from; nullopt before the first or after a Miss().
  std::optional<EnergySource> source() const { return source_; }
  const MarginalEnergy& marginal() const { return marginal_; }

 private:
  CounterRate joules_;
  MarginalEnergy marginal_;
  std::optional<double> watts_;
  std::optional<EnergySource> source_;
};

}  // namespace eoc::signals
