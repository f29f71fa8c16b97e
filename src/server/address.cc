#include "server/address.h"

#include <charconv>
#include <stdexcept>

#include "common/text.h"

namespace eoc::server {
namespace {

[[noreturn]] void Fail(std::string_view address, std::string_view why) {
  throw std::invalid_argument("listen address " + Quoted(address) + ": " + std::string(why));
}

}  // namespace

HostPort ParseHostPort(std::string_view address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) Fail(address, "want host:port");
  std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  if (host.starts_with('[') || host.ends_with(']')) {
    if (host.size() < 2 || !host.starts_with('[') || !host.ends_with(']')) {
      Fail(address, "unbalanced brackets");
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    Fail(address, "an IPv6 host needs brackets, as in [::1]:8080");
  }
  HostPort result{.host = std::string(host)};
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), result.port);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size()) {
    Fail(address, "port " + Quoted(port) + " is not a number from 0 to 65535");
  }
  return result;
}

}  // namespace eoc::server
