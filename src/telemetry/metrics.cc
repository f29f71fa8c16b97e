#include "telemetry/metrics.h"

#include <prometheus/text_serializer.h>

#include <utility>

namespace eoc::telemetry {

void Metrics::AddCollector(Collector collect) {
  const std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collect));
}

std::string Metrics::Serialize() const {
  std::vector<prometheus::MetricFamily> families = registry_.Collect();
  std::vector<Collector> collectors;
  {
    const std::lock_guard lock(mu_);
    collectors = collectors_;
  }
  for (const Collector& collect : collectors) {
    for (prometheus::MetricFamily& family : collect()) families.push_back(std::move(family));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace eoc::telemetry
