// Installs the project's CRDs (crds/*.yaml) on a control plane with `kubectl apply`, as a user
// does, and waits until the API server serves them. Idempotent, and safe to run from processes
// that share a control plane at once.
//
//   std::string error = eoc::testing::InstallCrds(*plane);
//   ASSERT_EQ(error, "");
#pragma once

#include <string>

#include "control_plane.h"

namespace eoc::testing {

// "" on success, else what failed with kubectl's output.
std::string InstallCrds(const ControlPlane& plane);

}  // namespace eoc::testing
