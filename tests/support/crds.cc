#include "crds.h"

#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "child_process.h"

namespace eoc::testing {
namespace {

// "" when `argv` exits 0, else its output. `argv` starts with /usr/bin/env, which finds the
// program on $PATH.
std::string Run(const std::vector<std::string>& argv) {
  ChildProcess child(argv, true);
  const int status = child.Wait();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return argv[1] + " " + argv[2] + " failed:\n" + child.Output();
}

}  // namespace

std::string InstallCrds(const ControlPlane& plane) {
  const std::string kubeconfig = "--kubeconfig=" + plane.Var("EOC_KUBECONFIG");
  // Tests running at once apply the same CRD: the create that loses the race answers
  // AlreadyExists, and applying again then patches.
  std::string error;
  for (int attempt = 0; attempt < 5; ++attempt) {
    error = Run({"/usr/bin/env", "kubectl", "apply", kubeconfig, "-f", EOC_CRDS_DIR});
    if (error.empty()) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (!error.empty()) return error;
  return Run({"/usr/bin/env", "kubectl", "wait", kubeconfig, "--for=condition=established",
              "--timeout=60s", "crd/inferencepools.eoc.dev"});
}

}  // namespace eoc::testing
