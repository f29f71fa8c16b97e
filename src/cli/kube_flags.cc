#include "cli/kube_flags.h"

#include <exception>

#include "common/stop_signals.h"
#include "telemetry/logging.h"

namespace eoc::cli {

void AddKubeFlags(CLI::App& app, KubeFlags& flags) {
  app.add_option("--kubeconfig", flags.load.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  app.add_option("--context", flags.load.context, "kubeconfig context (default: current-context)");
  app.add_option("--kube-api-qps", flags.client.qps, "client-side limit on API calls per second")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--kube-api-burst", flags.client.burst, "burst of API calls above the QPS limit")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void AddLogLevelFlag(CLI::App& app, KubeFlags& flags) {
  app.add_option("--log-level", flags.log_level, "debug, info, warn or error")
      ->capture_default_str();
}

Connection Connect(const KubeFlags& flags) {
  Connection out{.config = kube::LoadConfig(flags.load)};
  out.client = kube::Client::Create(out.config, flags.client);
  return out;
}

int Main(CLI::App& app, int argc, char** argv, const KubeFlags& flags, const std::string& component,
         const std::function<int()>& run) {
  BlockStopSignals();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    telemetry::SetLogLevel(telemetry::ParseLogLevel(flags.log_level));
    return run();
  } catch (const std::exception& e) {
    telemetry::Logger(component).Error("cannot run", {{"error", e.what()}});
    return 1;
  }
}

}  // namespace eoc::cli
