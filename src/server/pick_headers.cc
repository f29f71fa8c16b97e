#include "server/pick_headers.h"

#include <charconv>
#include <utility>

#include "common/text.h"
#include "routing/prefix_hash.h"
#include "server/caller_caps.h"
#include "server/pick_body.h"

namespace eoc::server {
namespace {

// A whole number from 0 to `max`, nothing else.
std::optional<std::int64_t> WholeNumber(std::string_view text, std::int64_t max) {
  std::int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0 || value > max) {
    return std::nullopt;
  }
  return value;
}

std::string NotAWholeNumber(std::string_view header, std::int64_t max) {
  return "header " + std::string(header) + ": must be a whole number from 0 to " +
         std::to_string(max);
}

// The comma list into `out` (at most kMaxPrefixBlocks kept); an error names the bad item.
std::string ParsePrefixHashes(std::string_view list, std::vector<routing::BlockHash>& out) {
  std::size_t index = 0;
  while (!TrimWhitespace(list).empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view item = TrimWhitespace(list.substr(0, comma));
    const auto hash = routing::ParseBlockHash(item);
    if (!hash) {
      return "header x-eoc-prefix-hashes: item " + std::to_string(index) +
             " must be 16 hex digits, not " + Quoted(item);
    }
    if (out.size() < routing::kMaxPrefixBlocks) out.push_back(*hash);
    ++index;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return {};
}

}  // namespace

std::string ParseFairnessKey(const Request& request, std::string_view& out) {
  out = {};
  const auto value = request.header("x-eoc-fairness-key");
  if (!value) return {};
  const std::string_view key = TrimWhitespace(*value);
  if (key.size() > CallerCaps::kMaxUserBytes) {
    return "header x-eoc-fairness-key: at most " + std::to_string(CallerCaps::kMaxUserBytes) +
           " bytes";
  }
  out = key;
  return {};
}

bool IsAuthMode(const Request& request) {
  const auto mode = request.header("x-eoc-auth-mode");
  return mode && TrimWhitespace(*mode) == "1";
}

std::string ParsePickHeaders(const Request& request, std::string_view session_header,
                             PickHeaders& out) {
  std::vector<routing::BlockHash> prefix = std::move(out.prefix_hashes);
  prefix.clear();
  out = PickHeaders{.prefix_hashes = std::move(prefix)};
  if (const auto mode = request.header("x-eoc-auth-mode")) {
    const std::string_view value = TrimWhitespace(*mode);
    if (value != "1" && value != "0") {
      return "header x-eoc-auth-mode: must be 1 or 0, not " + Quoted(value);
    }
    out.auth_mode = IsAuthMode(request);
  }
  if (std::string error = ParseFairnessKey(request, out.fairness_key); !error.empty()) {
    return error;
  }
  if (const auto model = request.header("x-model")) {
    if (model->size() > routing::kMaxModelNameBytes) {
      return "header x-model: at most " + std::to_string(routing::kMaxModelNameBytes) + " bytes";
    }
    out.model = TrimWhitespace(*model);
  }
  for (const auto& [name, field] : {std::pair{"x-eoc-prompt-tokens", &out.prompt_tokens},
                                    std::pair{"x-eoc-expected-tokens", &out.expected_tokens}}) {
    if (const auto value = request.header(name)) {
      const auto n = WholeNumber(TrimWhitespace(*value), kMaxPickTokens);
      if (!n) return NotAWholeNumber(name, kMaxPickTokens);
      *field = *n;
    }
  }
  if (const auto value = request.header("x-eoc-wait-ms")) {
    out.wait_ms = WholeNumber(TrimWhitespace(*value), kMaxPickWaitMs);
    if (!out.wait_ms) return NotAWholeNumber("x-eoc-wait-ms", kMaxPickWaitMs);
  }
  if (const auto value = request.header("x-eoc-prefix-hashes")) {
    std::string error = ParsePrefixHashes(*value, out.prefix_hashes);
    if (!error.empty()) return error;
  }
  if (const auto session = session_header.empty() ? std::nullopt : request.header(session_header)) {
    const std::string_view id = TrimWhitespace(*session);
    if (id.size() > routing::kMaxSessionIdBytes) {
      return "header " + std::string(session_header) + ": at most " +
             std::to_string(routing::kMaxSessionIdBytes) + " bytes";
    }
    if (!id.empty()) out.session_id = id;
  }
  return {};
}

}  // namespace eoc::server
