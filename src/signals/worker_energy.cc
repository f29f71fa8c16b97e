#include "signals/worker_energy.h"

#include <cmath>

namespace eoc::signals {

void WorkerEnergy::Observe(TimePoint at, const PodEnergy& reading,
                           std::optional<double> tokens_per_second) {
  std::optional<double> watts;
  if (reading.joules_total) {
    watts = joules_.Add(at, *reading.joules_total);
  } else {
    joules_.Reset();  // the counter went from the page: its next value starts afresh
  }
  const bool gauge = reading.watts && std::isfinite(*reading.watts) && *reading.watts >= 0;
  // A counter that did not move while the gauge shows a draw is stuck (a field the device does
  // not update): the gauge is right.
  if (gauge && (!watts || (*watts == 0 && *reading.watts > 0))) watts = reading.watts;
  watts_ = watts;
  source_ = reading.source;
  if (watts && tokens_per_second) marginal_.Add(at, *watts, *tokens_per_second);
}

void WorkerEnergy::Miss() {
  joules_.Reset();
  watts_.reset();
  source_.reset();
}

}  // namespace eoc::signals
