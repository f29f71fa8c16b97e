// Internal to the server: a Response as the bytes that go on the wire: the head (status line and
// headers) formatted into a buffer that the connection reuses, and the body sent from where the
// handler left it, both in one gathered write. Once a connection is warm, no allocation.
#pragma once

#include <string>
#include <string_view>

#include "server/http.h"

namespace eoc::server::internal {

struct Framing {
  bool keep_alive = true;  // else "Connection: close"
  bool http10 = false;     // an HTTP/1.0 client needs "Connection: keep-alive" to keep it
  bool omit_body = false;  // HEAD: the headers of the GET answer, without its body
};

// Replaces `out` with the status line and headers of `response`, through the blank line.
void SerializeHead(const Response& response, const Framing& framing, std::string& out);

// What follows the head: the body, or nothing (HEAD, 204, 304).
std::string_view BodyToSend(const Response& response, const Framing& framing);

}  // namespace eoc::server::internal
