// JSON string literals for text that comes from anywhere (pod names, API server messages, request
// headers): always valid JSON, even when the input is not valid UTF-8.
//
//   std::string line = "{\"msg\":";
//   eoc::telemetry::AppendJsonString(line, "a \"quoted\"\nword");   // "a \"quoted\"\nword"
#pragma once

#include <string>
#include <string_view>

namespace eoc::telemetry {

// Appends `text` to `out` as a quoted JSON string: `"` and `\` escaped, control characters as
// \n, \t, ... or \u00XX, and each byte that is not part of well-formed UTF-8 replaced by U+FFFD
// (so a line never breaks a JSON parser downstream).
void AppendJsonString(std::string& out, std::string_view text);

}  // namespace eoc::telemetry
