// How gtest prints the API's values in failure messages ("spec.targetPort: must be ...") rather
// than as bytes.
#pragma once

#include <ostream>

#include "api/inference_pool.h"

namespace eoc::api {

inline void PrintTo(const FieldError& e, std::ostream* os) { *os << e.ToString(); }

inline void PrintTo(const Condition& c, std::ostream* os) {
  *os << c.type << "=" << c.status << " (" << c.reason << ": " << c.message << ") at "
      << c.last_transition_time << ", generation " << c.observed_generation;
}

inline void PrintTo(const LabelRequirement& r, std::ostream* os) {
  *os << LabelSelector({r}).ToString();
}

}  // namespace eoc::api
