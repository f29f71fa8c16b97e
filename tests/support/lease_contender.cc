// A process that contends for one Lease, for the leader-election tests: it runs a LeaderElector
// and prints one line per transition on stdout (flushed, so a test reading the pipe sees it at
// once):
//
//   LEADING <identity>       this process started leading
//   STOPPED <identity>       this process stopped leading
//   LEADER <holder>          a new holder was observed (this process or another)
//   EXITING <identity>       SIGTERM or SIGINT: stopped, Lease released; exits 0 next
//
//   lease_contender --kubeconfig FILE --namespace NS --lease NAME --identity ID
//                   [--lease-duration 15] [--renew-deadline 10] [--retry-period 2]   (seconds)
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <string>

#include "common/stop_signals.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/leader_election.h"

namespace {

std::mutex print_mu;

void Print(const std::string& what, const std::string& who) {
  const std::lock_guard lock(print_mu);
  std::cout << what << ' ' << who << std::endl;  // std::endl: the test reads lines as they come
}

// --key value pairs; anything else is a usage error.
std::map<std::string, std::string> ParseFlags(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument " + key);
    flags[key.substr(2)] = argv[i + 1];
  }
  if (argc % 2 == 0) throw std::invalid_argument("every flag takes a value");
  return flags;
}

std::string Required(const std::map<std::string, std::string>& flags, const std::string& key) {
  const auto it = flags.find(key);
  if (it == flags.end() || it->second.empty())
    throw std::invalid_argument("--" + key + " is required");
  return it->second;
}

std::chrono::milliseconds Seconds(const std::map<std::string, std::string>& flags,
                                  const std::string& key, double fallback) {
  const auto it = flags.find(key);
  const double seconds = it == flags.end() ? fallback : std::stod(it->second);
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

int Run(int argc, char** argv) {
  eoc::BlockStopSignals();
  const auto flags = ParseFlags(argc, argv);
  eoc::kube::LeaderElectionConfig config;
  config.lease_namespace = Required(flags, "namespace");
  config.lease_name = Required(flags, "lease");
  config.identity = Required(flags, "identity");
  config.lease_duration = Seconds(flags, "lease-duration", 15);
  config.renew_deadline = Seconds(flags, "renew-deadline", 10);
  config.retry_period = Seconds(flags, "retry-period", 2);

  eoc::kube::ClientOptions client_options;
  // Below the renew deadline, so that one hung call cannot keep the leader from stepping down.
  client_options.transport.request_timeout = config.renew_deadline / 2;
  auto client = eoc::kube::Client::Create(
      eoc::kube::LoadConfig({.kubeconfig = Required(flags, "kubeconfig")}), client_options);

  const std::string id = config.identity;
  eoc::kube::LeaderElector elector(
      *client, config,
      {.on_started_leading = [&id] { Print("LEADING", id); },
       .on_stopped_leading = [&id] { Print("STOPPED", id); },
       .on_new_leader = [](const std::string& holder) { Print("LEADER", holder); }});
  elector.Start();
  eoc::WaitForStopSignal();
  elector.Stop();
  Print("EXITING", id);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "lease_contender: " << e.what() << "\n";
    return 2;
  }
}
