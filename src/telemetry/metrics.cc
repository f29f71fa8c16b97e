#include "telemetry/metrics.h"

#include <prometheus/text_serializer.h>

namespace eoc::telemetry {

std::string Metrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(registry_.Collect());
}

}  // namespace eoc::telemetry
