// Internal to the node agent: what it reads of a pod, and the loopback addresses it hands out.
//
//   AgentPod pod = ToAgentPod(object);             // lenient beyond metadata
//   AddressPool pool(ParseAddressBase("127.0.10.1"));
//   std::optional<std::string> ip = pool.Allocate();
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "node_agent_affinity.h"

namespace eoc::testing::internal {

inline constexpr const char* kGpuResource = "nvidia.com/gpu";
inline constexpr int kDefaultPort = 8000;

// What the agent reads of a pod.
struct AgentPod {
  std::string ns;
  std::string name;
  std::string uid;
  std::string node_name;
  std::string phase;
  std::string pod_ip;
  std::string host_ip;
  bool terminating = false;
  bool ready = false;             // the Ready condition is True
  bool containers_ready = false;  // the ContainersReady condition is True
  std::map<std::string, std::string> node_selector;
  RequiredNodeAffinity affinity;  // spec.affinity.nodeAffinity's required terms
  std::map<std::string, std::string> annotations;
  std::int64_t gpus = 0;  // nvidia.com/gpu requested, over all containers
  int port = kDefaultPort;
  std::vector<std::pair<std::string, std::string>> containers;  // name, image

  std::string key() const { return ns + "/" + name; }
};

// Reads a Pod; throws kube::MappingError only without metadata.name. Lenient beyond metadata: a
// spec field of an odd shape is read as absent, but for the required node affinity (its
// `problem` says what is odd).
AgentPod ToAgentPod(const nlohmann::json& pod);

// A loopback (127/8) IPv4 address as a number, for counting up from it; throws
// std::invalid_argument naming it otherwise.
std::uint32_t ParseLoopback(const std::string& text);
// An address base as a number: a loopback address, or else an IPv4 address this host can bind
// (one of a local interface's, or within a `local` route, e.g. 10.231.5.1 on a test's own
// device). Throws std::invalid_argument naming it and why otherwise.
std::uint32_t ParseAddressBase(const std::string& text);
std::string FormatIPv4(std::uint32_t ip);

// Addresses handed out round-robin from a base, never one in use; so a released address is the
// last to come back. A loopback base hands out the rest of 127/8; any other base the rest of its
// /24 (x.y.z.1 to x.y.z.254), all of which the host must be able to bind.
class AddressPool {
 public:
  explicit AddressPool(std::uint32_t base)
      : base_(base),
        first_((base >> 24) == 127 ? 0x7F000000 : base & 0xFFFFFF00),
        last_((base >> 24) == 127 ? 0x7FFFFFFE : (base & 0xFFFFFF00) | 0xFE),
        next_(base) {}

  // The next free address after the last one handed out (x.y.z.0 and x.y.z.255 skipped), or
  // nullopt when every address from the base up is in use.
  std::optional<std::string> Allocate();
  // Takes a given address (a pod's existing podIP); false when it is in use or outside the pool's
  // range (127/8, or the base's /24).
  bool Claim(const std::string& text);
  void Release(const std::string& text);

 private:
  const std::uint32_t base_;
  const std::uint32_t first_;  // the range Claim accepts: 127/8, or the base's /24
  const std::uint32_t last_;   // the last address handed out: 127.255.255.254, or x.y.z.254
  std::uint32_t next_;
  std::set<std::uint32_t> in_use_;
};

}  // namespace eoc::testing::internal
