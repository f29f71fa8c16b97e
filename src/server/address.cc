#include "server/address.h"

#include <optional>
#include <stdexcept>

#include "common/text.h"
#include "common/url.h"

namespace eoc::server {
namespace {

[[noreturn]] void Fail(std::string_view address, std::string_view why) {
  throw std::invalid_argument("listen address " + Quoted(address) + ": " + std::string(why));
}

}  // namespace

HostPort ParseHostPort(std::string_view address) {
  std::string error;
  const std::optional<eoc::HostPort> parts = SplitHostPort(address, &error);
  if (!parts) Fail(address, error);
  if (!parts->port) Fail(address, "want host:port");
  return {.host = std::string(parts->host), .port = *parts->port};
}

}  // namespace eoc::server
