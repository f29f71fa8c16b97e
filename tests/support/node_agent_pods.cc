#include "node_agent_pods.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <stdexcept>
#include <system_error>

#include "common/json_members.h"
#include "fake_worker.h"
#include "kube/types.h"

namespace eoc::testing::internal {
namespace {

using nlohmann::json;

// A quantity of whole units ("1", 2); 0 when absent or not a whole number.
std::int64_t Units(const json* quantity) {
  if (quantity == nullptr) return 0;
  if (quantity->is_number_integer()) return quantity->get<std::int64_t>();
  std::int64_t n = 0;
  if (quantity->is_string()) {
    const auto& s = quantity->get_ref<const std::string&>();
    std::from_chars(s.data(), s.data() + s.size(), n);
  }
  return n;
}

bool ConditionTrue(const json* status, const char* type) {
  const json* conditions = MemberOrNull(status, "conditions");
  if (conditions == nullptr || !conditions->is_array()) return false;
  return std::any_of(conditions->begin(), conditions->end(), [type](const json& c) {
    return StringOrEmpty(c, "type") == type && StringOrEmpty(c, "status") == "True";
  });
}

}  // namespace

AgentPod ToAgentPod(const json& pod) {
  kube::ObjectMeta meta = kube::ParseObjectMeta(pod);
  AgentPod view{.ns = std::move(meta.ns), .name = std::move(meta.name), .uid = std::move(meta.uid)};
  view.terminating = meta.deletion_timestamp.has_value();
  for (auto& [k, v] : meta.annotations) {
    if (k.starts_with(kFakeAnnotationPrefix) || k == kModelsAnnotation) {
      view.annotations.emplace(k, v);
    }
  }
  const json* spec = MemberOrNull(pod, "spec");
  view.node_name = StringOrEmpty(spec, "nodeName");
  if (const json* selector = MemberOrNull(spec, "nodeSelector");
      selector != nullptr && selector->is_object()) {
    for (const auto& [k, v] : selector->items()) {
      if (v.is_string()) view.node_selector.emplace(k, v.get<std::string>());
    }
  }
  view.affinity = ParseRequiredNodeAffinity(spec);
  const json* containers = MemberOrNull(spec, "containers");
  if (containers != nullptr && containers->is_array()) {
    for (const json& c : *containers) {
      view.containers.emplace_back(StringOrEmpty(c, "name"), StringOrEmpty(c, "image"));
      // A limit alone stands for the request too (the API server defaults it so).
      const json* resources = MemberOrNull(c, "resources");
      const json* request = MemberOrNull(MemberOrNull(resources, "requests"), kGpuResource);
      view.gpus +=
          Units(request != nullptr ? request
                                   : MemberOrNull(MemberOrNull(resources, "limits"), kGpuResource));
    }
    const json* ports = containers->empty() ? nullptr : MemberOrNull((*containers)[0], "ports");
    const json* port = ports != nullptr && ports->is_array() && !ports->empty()
                           ? MemberOrNull((*ports)[0], "containerPort")
                           : nullptr;
    if (port != nullptr && port->is_number_integer() && port->get<int>() > 0 &&
        port->get<int>() < 65536) {
      view.port = port->get<int>();
    }
  }
  const json* status = MemberOrNull(pod, "status");
  view.phase = StringOrEmpty(status, "phase");
  view.pod_ip = StringOrEmpty(status, "podIP");
  view.host_ip = StringOrEmpty(status, "hostIP");
  view.ready = ConditionTrue(status, "Ready");
  view.containers_ready = ConditionTrue(status, "ContainersReady");
  return view;
}

// A loopback (127/8) IPv4 address as a number, for counting up from it.
std::uint32_t ParseLoopback(const std::string& text) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1 || (ntohl(addr.s_addr) >> 24) != 127) {
    throw std::invalid_argument("NodeAgent: address_base \"" + text +
                                "\" is not an IPv4 loopback address (127.x.y.z)");
  }
  return ntohl(addr.s_addr);
}

std::uint32_t ParseAddressBase(const std::string& text) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1) {
    throw std::invalid_argument("NodeAgent: address_base \"" + text +
                                "\" is not an IPv4 address (a.b.c.d)");
  }
  const std::uint32_t ip = ntohl(addr.s_addr);
  if ((ip >> 24) == 127) return ip;
  // Not loopback: the host must own it, or no worker could bind it. Binding port 0 asks the
  // kernel exactly that (EADDRNOTAVAIL when no interface or local route has the address).
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw std::invalid_argument(
        "NodeAgent: address_base \"" + text +
        "\": cannot open a socket to check it: " + std::system_category().message(errno));
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = addr;
  sa.sin_port = 0;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  const int bind_errno = errno;
  ::close(fd);
  if (rc != 0) {
    throw std::invalid_argument(
        "NodeAgent: address_base \"" + text +
        "\" is neither loopback (127.x.y.z) nor an address of a local interface (bind: " +
        std::system_category().message(bind_errno) + ")");
  }
  return ip;
}

std::string FormatIPv4(std::uint32_t ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xFF) + "." +
         std::to_string((ip >> 8) & 0xFF) + "." + std::to_string(ip & 0xFF);
}

std::optional<std::string> AddressPool::Allocate() {
  for (std::uint32_t tries = 0; tries < last_ - base_ + 1; ++tries) {
    const std::uint32_t ip = next_;
    next_ = next_ >= last_ ? base_ : next_ + 1;
    const std::uint32_t low = ip & 0xFF;
    if (low == 0 || low == 255) continue;
    if (in_use_.insert(ip).second) return FormatIPv4(ip);
  }
  return std::nullopt;
}

bool AddressPool::Claim(const std::string& text) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1) return false;
  const std::uint32_t ip = ntohl(addr.s_addr);
  return ip >= first_ && ip <= last_ && in_use_.insert(ip).second;
}

void AddressPool::Release(const std::string& text) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) == 1) in_use_.erase(ntohl(addr.s_addr));
}

}  // namespace eoc::testing::internal
