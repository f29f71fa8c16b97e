// The JSON body of `POST /v1/pick` (DESIGN.md, "The pick endpoint"), read by a small strict
// parser of its own: RFC 8259 JSON and nothing looser, work linear in the body, no recursion, and
// no allocation once the PickBody and the scratch are warm (a string without escapes is a view into
// the body, found 8 bytes at a time).
//
//   eoc::server::PickBody pick;           // both kept per connection, reused for every request
//   eoc::server::PickBodyScratch scratch;
//   std::string error = eoc::server::ParsePickBody(
//       R"({"pool":"prod/chat","session_id":"u-42","prefix_hashes":["3f2a9c0d1e4b5a67"]})", pick,
//       scratch);
//   if (!error.empty()) { /* 400, `error` as the body: "pool: required" */ }
//   pick.pool;              // "prod/chat": a view into the body, or into scratch
//   pick.prefix_hashes[0];  // 0x3f2a9c0d1e4b5a67
//
// The views in a PickBody point into the body or into the scratch: they are valid while both live
// and until the next parse with the same scratch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "routing/ids.h"

namespace eoc::server {

// The bounds of the integer fields, as ParsePickBody's messages state them.
inline constexpr std::int64_t kMaxPickTokens = 1'000'000'000;  // prompt_tokens, expected_tokens
inline constexpr std::int64_t kMaxPickWaitMs = 3'600'000;      // wait_ms: one hour
// How deep objects and arrays may nest, the body's own object counting as the first level.
inline constexpr int kMaxPickBodyDepth = 64;

struct PickBody {
  std::string_view pool;   // required, non-empty; checked further by the handler
  std::string_view model;  // empty when absent (or given as "")
  std::optional<std::string_view> session_id;  // non-empty, at most routing::kMaxSessionIdBytes
  std::int64_t prompt_tokens = 0;              // 0 when absent
  std::int64_t expected_tokens = 0;            // 0 when absent
  // Reused between parses (cleared, capacity kept). At most routing::kMaxPrefixBlocks are kept:
  // later ones are validated but not kept.
  std::vector<routing::BlockHash> prefix_hashes;
  std::optional<std::string_view> prompt;  // the decoded text
  std::optional<std::int64_t> wait_ms;
};

// Where decoded strings live when they had escapes (else the views point into the body). Reused
// between parses; its content is the parser's business.
struct PickBodyScratch {
  std::string pool;
  std::string model;
  std::string session_id;
  std::string prompt;
  std::string key;      // a field name with escapes in it
  std::string element;  // a prefix hash with escapes in it
};

// Fills `out` (reset first) from `body`. Returns an empty string on success; else a message for a
// 400 that names the field or the problem (and `out` is reset again):
//   "body: not valid JSON at byte 17: expected ':'"   (bytes count from 0)
//   "body: expected a JSON object"
//   "body: objects and arrays nested deeper than 64 at byte 90"
//   "pool: required", "pool: must be a string", "pool: must not be empty"
//   "model: must be a string", "model: at most 253 bytes"
//   "session_id: must be a string", "session_id: must not be empty",
//   "session_id: at most 256 bytes"
//   "prompt_tokens: must be a whole number from 0 to 1000000000" (and expected_tokens)
//   "wait_ms: must be a whole number from 0 to 3600000"
//   "prefix_hashes: must be an array", "prefix_hashes[3]: must be 16 hex digits"
//   "prompt: must be a string"
//   "give prefix_hashes or prompt, not both"
//   "field \"model\" appears twice"
// Invalid JSON anywhere is reported before any field's problem; among fields, the first in the
// body. `null` for any field means absent (a null pool is a missing one); unknown fields are
// skipped, whatever their value. Invalid UTF-8 in the raw bytes is passed through unchanged.
std::string ParsePickBody(std::string_view body, PickBody& out, PickBodyScratch& scratch);

}  // namespace eoc::server
