// The gateway form of a pick (`GET|POST /v1/pools/{namespace}/{name}/pick`, DESIGN.md, "The pick
// endpoint"): its inputs in request headers, as gateways send them; the JSON form's parser is
// pick_body.h. Strict: each value is checked whole, and an error names the header.
//
//   eoc::server::PickHeaders pick;   // kept per thread, reused for every request
//   std::string error = eoc::server::ParsePickHeaders(request, "x-session-id", pick);
//   if (!error.empty()) { /* 400: "header x-eoc-wait-ms: must be a whole number from 0 to ..." */ }
//   pick.session_id;                 // a view into the request's headers
//
// The views in a PickHeaders point into the request: they are valid while it lives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "routing/ids.h"
#include "server/http.h"

namespace eoc::server {

struct PickHeaders {
  bool auth_mode = false;  // x-eoc-auth-mode: 1 (0 or absent: false)
  std::string_view model;  // x-model; empty when absent
  // The pool's session header: non-empty, at most routing::kMaxSessionIdBytes; absent or empty:
  // no session.
  std::optional<std::string_view> session_id;
  std::int64_t prompt_tokens = 0;    // x-eoc-prompt-tokens; 0 when absent
  std::int64_t expected_tokens = 0;  // x-eoc-expected-tokens; 0 when absent
  // x-eoc-prefix-hashes, a comma list. Reused between parses (cleared, capacity kept). At most
  // routing::kMaxPrefixBlocks are kept: later ones are validated but not kept.
  std::vector<routing::BlockHash> prefix_hashes;
  std::optional<std::int64_t> wait_ms;  // x-eoc-wait-ms
  std::string_view fairness_key;        // x-eoc-fairness-key (ParseFairnessKey); empty when absent
};

// Fills `out` (reset first) from `request`'s headers, the session id from the one named
// `session_header` (the pool's sessionAffinity.header; empty: none is read). Values are trimmed of
// spaces and tabs. Returns an empty string on success; else a message for a 400 that names the
// header:
//   "header x-eoc-auth-mode: must be 1 or 0, not \"yes\""
//   "header x-model: at most 253 bytes"
//   "header x-eoc-prompt-tokens: must be a whole number from 0 to 1000000000" (and expected)
//   "header x-eoc-wait-ms: must be a whole number from 0 to 3600000"
//   "header x-eoc-prefix-hashes: item 1 must be 16 hex digits, not \"nope\""
//   "header x-session-id: at most 256 bytes"
//   "header x-eoc-fairness-key: at most 256 bytes"
// `auth_mode` is read first and stays set on a later error, so that the error is answered in the
// request's form.
std::string ParsePickHeaders(const Request& request, std::string_view session_header,
                             PickHeaders& out);

// The request's fairness key (x-eoc-fairness-key, trimmed; empty when absent), the end user a
// gateway speaks for (caller_caps.h), into `out`. Both forms read it. Returns an empty string on
// success; else a message for a 400: "header x-eoc-fairness-key: at most 256 bytes".
std::string ParseFairnessKey(const Request& request, std::string_view& out);

// Whether the request asks to be answered in auth_request form (x-eoc-auth-mode: 1), for an answer
// made before its headers are parsed (a refused caller's).
bool IsAuthMode(const Request& request);

}  // namespace eoc::server
