// The command-line setup that eoc-controller and eoc-node-agent share: --kubeconfig, --context,
// --log-level, --kube-api-qps and --kube-api-burst, the client they describe, and main's
// parse-run-report.
//
//   int main(int argc, char** argv) {
//     CLI::App app{"eoc-node-agent: ..."};
//     eoc::cli::KubeFlags kube;
//     eoc::cli::AddKubeFlags(app, kube);
//     eoc::cli::AddLogLevelFlag(app, kube);
//     app.add_option("--node", nodes, "...");
//     return eoc::cli::Main(app, argc, argv, kube, "node-agent", [&] {
//       eoc::cli::Connection api = eoc::cli::Connect(kube);   // throws on a bad config
//       ...
//       return 0;
//     });
//   }
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include "kube/client.h"
#include "kube/config.h"

namespace eoc::cli {

struct KubeFlags {
  kube::LoadOptions load;      // --kubeconfig, --context
  kube::ClientOptions client;  // --kube-api-qps, --kube-api-burst
  std::string log_level = "info";
};

// Adds --kubeconfig, --context, --kube-api-qps and --kube-api-burst to `app`; they write into
// `flags` when `app` parses.
void AddKubeFlags(CLI::App& app, KubeFlags& flags);
// Adds --log-level, for binaries that run through Main (which applies it).
void AddLogLevelFlag(CLI::App& app, KubeFlags& flags);

struct Connection {
  kube::RestConfig config;
  std::unique_ptr<kube::Client> client;
};
// Loads the configuration the flags name (kubectl's precedence) and makes a client with their
// limits. Throws kube::ConfigError saying what is wrong.
Connection Connect(const KubeFlags& flags);

// What main does: blocks the stop signals (before any thread starts, so that every thread
// inherits them), parses the command line (a bad one prints its error and exits non-zero, --help
// prints help), sets the log level, and runs `run`. An exception from either (a bad config, a port
// in use) is logged as `component`'s "cannot run" with its message, and exits 1.
int Main(CLI::App& app, int argc, char** argv, const KubeFlags& flags, const std::string& component,
         const std::function<int()>& run);

}  // namespace eoc::cli
