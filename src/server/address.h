// Listen addresses as flags give them: "host:port", "[v6]:port", ":port".
//
//   auto a = eoc::server::ParseHostPort("[::1]:8080");   // {.host = "::1", .port = 8080}
//   auto b = eoc::server::ParseHostPort(":9090");        // {.host = "", .port = 9090}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace eoc::server {

struct HostPort {
  std::string host;  // without brackets; empty for "every interface"
  std::uint16_t port = 0;
};

// Throws std::invalid_argument that quotes `address` when it has no port, a port that is not a
// number from 0 to 65535, or unbalanced brackets.
HostPort ParseHostPort(std::string_view address);

}  // namespace eoc::server
