// Internal to the node agent: what it reads of a pod, and the loopback addresses it hands out.
//
//   AgentPod pod = ToAgentPod(object);             // lenient beyond metadata
//   AddressPool pool(ParseLoopback("127.0.10.1"));
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
  std::map<std::string, std::string> annotations;
  std::int64_t gpus = 0;  // nvidia.com/gpu requested, over all containers
  int port = kDefaultPort;
  std::vector<std::pair<std::string, std::string>> containers;  // name, image

  std::string key() const { return ns + "/" + name; }
};

// Reads a Pod; throws kube::MappingError only without metadata.name. Lenient beyond metadata: a
// spec field of an odd shape is read as absent.
AgentPod ToAgentPod(const nlohmann::json& pod);

// A loopback (127/8) IPv4 address as a number, for counting up from it; throws
// std::invalid_argument naming it otherwise.
std::uint32_t ParseLoopback(const std::string& text);
std::string FormatIPv4(std::uint32_t ip);

// Loopback addresses handed out round-robin from a base, never one in use; so a released address
// is the last to come back.
class AddressPool {
 public:
  explicit AddressPool(std::uint32_t base) : base_(base), next_(base) {}

  // The next free address after the last one handed out (x.y.z.0 and x.y.z.255 skipped), or
  // nullopt when every address from the base up is in use.
  std::optional<std::string> Allocate();
  // Takes a given address (a pod's existing podIP); false when it is in use or not loopback.
  bool Claim(const std::string& text);
  void Release(const std::string& text);

 private:
  static constexpr std::uint32_t kLast = 0x7FFFFFFE;  // 127.255.255.254
  const std::uint32_t base_;
  std::uint32_t next_;
  std::set<std::uint32_t> in_use_;
};

}  // namespace eoc::testing::internal
