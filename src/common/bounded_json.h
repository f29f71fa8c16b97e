// JSON from outside the process (the API server's answers, watch lines, an exec plugin's output,
// a Carbon Aware SDK's answers, trace files): parsed within a size and a nesting depth, and its
// values described in messages without writing them out whole.
//
// The depth is checked while parsing, so that nothing nested deeper than the limit is ever built:
// nlohmann's parser is iterative, but dump(), copies and comparisons recurse once per level, and a
// document of 200 KB can nest 100,000 levels and overflow the stack.
//
//   std::string error;
//   std::optional<nlohmann::json> doc = eoc::ParseBoundedJson(body, {.max_depth = 32,
//                                                                    .max_bytes = 1 << 20}, error);
//   if (!doc) return "the answer: " + error;     // "nested deeper than 32 levels"
//   "expected a number, got " + eoc::DescribeJson(value)   // got "70", got an array, got null
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace eoc {

struct JsonLimits {
  // How deep objects and arrays may nest, the outermost counting as the first level ("[]" has 1,
  // "[[]]" 2, a scalar 0).
  std::size_t max_depth = 0;
  std::size_t max_bytes = 0;
};

// `text` as one JSON document (RFC 8259); nullopt with `error` saying which limit it broke or
// where it stops being JSON: "2000000 bytes, over the limit of 1048576", "nested deeper than 32
// levels", "not valid JSON at byte 57 (line 4, column 5)". The error never quotes the text, which
// may be large, hostile or secret (an exec plugin's token).
std::optional<nlohmann::json> ParseBoundedJson(std::string_view text, const JsonLimits& limits,
                                               std::string& error);

// A JSON value for a message, short and escaped whatever its size: a string Quoted ("\"70\""),
// "an object" or "an array", a number, boolean or null as JSON writes it ("-5", "true", "null").
std::string DescribeJson(const nlohmann::json& value);

}  // namespace eoc
