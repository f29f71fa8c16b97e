// The tokens of the Prometheus text exposition format (0.0.4) that the parser (exposition.h)
// reads: sample values and timestamps as the Prometheus parsers accept them, the characters of
// metric and label names, quoted strings with their escapes, and UTF-8 validity.
//
//   ParseSampleValue("-3e3")        // -3000
//   ParseSampleValue("+Inf")        // infinity; "NaN", "inf", "-Infinity" too, in any case
//   ParseSampleValue("0x1p-3")      // nullopt: no hex, binary, octal or 1_000 forms
//   ParseTimestamp("-2")            // -2 (milliseconds); "2.72" gives nullopt
//   QuotedScan q = ScanQuoted(R"(a{b="x\"y"} 1)", 4);  // q.end == 10, q.escaped
//   std::string value = Unescape(R"(x\"y)");             // x"y
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace eoc::signals {

// A float as Go's strconv.ParseFloat reads it, less what expfmt and textparse refuse (hex
// mantissas, underscores, the 0b/0o/0x prefixes): an optional sign, decimal digits with an
// optional point and exponent ("08", ".3", "1.", "1e-3"), or inf/infinity (signed) and nan in
// any case. A number too large for a double is refused (Go's ErrRange, which expfmt reports);
// one too small reads as zero, as Go gives it.
std::optional<double> ParseSampleValue(std::string_view token);

// A timestamp as Go's strconv.ParseInt(token, 10, 64) reads it: an optional sign and decimal
// digits that fit in 64 bits.
std::optional<std::int64_t> ParseTimestamp(std::string_view token);

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past
// U+10FFFF), as Go's utf8.ValidString says.
bool IsValidUtf8(std::string_view text);

constexpr bool IsBlank(char c) { return c == ' ' || c == '\t'; }
constexpr bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
// [a-zA-Z_:] then [a-zA-Z0-9_:]*: an unquoted metric name.
constexpr bool IsMetricNameStart(char c) { return IsAsciiLetter(c) || c == '_' || c == ':'; }
constexpr bool IsMetricNameChar(char c) { return IsMetricNameStart(c) || IsAsciiDigit(c); }
// [a-zA-Z_] then [a-zA-Z0-9_]*: an unquoted label name.
constexpr bool IsLabelNameStart(char c) { return IsAsciiLetter(c) || c == '_'; }
constexpr bool IsLabelNameChar(char c) { return IsLabelNameStart(c) || IsAsciiDigit(c); }

// What ScanQuoted found wrong.
enum class QuotedError : std::uint8_t { kNone, kUnterminated, kBadEscape, kBadUtf8 };

struct QuotedScan {
  std::size_t end = 0;   // the index just past the closing quote
  bool escaped = false;  // the content holds an escape (Unescape it before use)
  QuotedError error = QuotedError::kNone;
};

// The double-quoted string of `line` that opens at `open` (line[open] == '"'), up to its closing
// quote: the escapes \\, \" and \n only, valid UTF-8, on this line.
QuotedScan ScanQuoted(std::string_view line, std::size_t open);

// `raw` with its escapes \\, \" and \n replaced, into *out (when not null). False, at the first
// other escape or at a lone backslash at the end, for anything else. HELP text is read this way
// too (expfmt takes \" in HELP as well).
bool Unescape(std::string_view raw, std::string* out);
// The content of a string ScanQuoted accepted, unescaped.
std::string Unescape(std::string_view raw);

}  // namespace eoc::signals
