// Pod addresses the API server will proxy to: it refuses loopback (and link-local) pod IPs, so
// a test whose workers are scraped through pods/proxy gives them private ones. A veth pair of the
// process's own in the host's network namespace (a `dummy` link would do, but the dummy module is
// not always there), one end holding 10.231.X.1/24, and a `local` route over that /24, so every
// 10.231.X.Y binds on this host; the node agent gets 10.231.X.1 as its address base. Deleting the
// device at the end removes its addresses and routes. Needs root.
//
//   ProxyableAddresses addresses;
//   if (const std::string why = addresses.Create(); !why.empty()) GTEST_SKIP() << why;
//   ... NodeAgentOptions{.address_base = addresses.base()} ...
#pragma once

#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "child_process.h"

namespace eoc::testing {

// Runs a shell command, its output kept out of the log; true when it exits 0 within 30 s.
inline bool RunQuietly(const std::string& command) {
  return RunToExit({"/bin/sh", "-c", command + " >/dev/null 2>&1"}, std::chrono::seconds(30)).ok;
}

// A veth pair of this process's own (eoc-px<pid>, eoc-px<pid>p), one end holding 10.231.X.1/24
// and a local route over 10.231.X.0/24. A device left by a killed run of the same pid is deleted
// first; the destructor deletes it (its addresses and routes go with it).
class ProxyableAddresses {
 public:
  ProxyableAddresses()
      : device_("eoc-px" + std::to_string(getpid())),
        subnet_("10.231." + std::to_string(getpid() % 250) + ".") {}
  ~ProxyableAddresses() {
    if (created_) (void)RunQuietly("ip link del " + device_);
  }
  ProxyableAddresses(const ProxyableAddresses&) = delete;
  ProxyableAddresses& operator=(const ProxyableAddresses&) = delete;
  ProxyableAddresses(ProxyableAddresses&&) = delete;
  ProxyableAddresses& operator=(ProxyableAddresses&&) = delete;

  // "" on success, else why the device could not be made.
  std::string Create() {
    if (geteuid() != 0) return "not root: cannot add a network device";
    if (!RunQuietly("command -v ip")) return "the ip command (iproute2) is not on PATH";
    (void)RunQuietly("ip link del " + device_);  // left over from a killed run
    if (!RunQuietly("ip link add " + device_ + " type veth peer name " + device_ + "p")) {
      return "`ip link add " + device_ + " type veth` failed (no permission to add devices?)";
    }
    created_ = true;
    const std::vector<std::string> steps = {
        "ip addr add " + subnet_ + "1/24 dev " + device_,
        "ip link set " + device_ + " up",
        "ip link set " + device_ + "p up",
        "ip route add local " + subnet_ + "0/24 dev " + device_ + " table local",
    };
    for (const auto& step : steps) {
      if (!RunQuietly(step)) return "`" + step + "` failed";
    }
    return "";
  }

  std::string base() const { return subnet_ + "1"; }
  const std::string& subnet() const { return subnet_; }

 private:
  std::string device_;
  std::string subnet_;  // "10.231.X."
  bool created_ = false;
};

}  // namespace eoc::testing
