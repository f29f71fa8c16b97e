#include "signals/exposition_tokens.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <system_error>

namespace eoc::signals {
namespace {

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// The parts of a decimal number: [digits][.digits][(e|E)[+-]digits], at least one mantissa digit.
struct Decimal {
  std::string_view integer;
  std::string_view fraction;
  bool exponent_negative = false;
  std::string_view exponent;
};

std::optional<Decimal> SplitDecimal(std::string_view s) {
  Decimal d;
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && IsAsciiDigit(s[i])) ++i;
    return s.substr(start, i - start);
  };
  d.integer = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    d.fraction = digits();
  }
  if (d.integer.empty() && d.fraction.empty()) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) d.exponent_negative = s[i++] == '-';
    d.exponent = digits();
    if (d.exponent.empty()) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  return d;
}

// Whether a number from_chars found out of range is too large (true) or too small (false): the
// decimal position of its first significant digit, plus its exponent, is above zero or not.
bool TooLarge(const Decimal& d) {
  std::int64_t position = 0;
  const std::size_t lead = d.integer.find_first_not_of('0');
  if (lead != std::string_view::npos) {
    position = static_cast<std::int64_t>(d.integer.size() - lead);
  } else {
    const std::size_t first = d.fraction.find_first_not_of('0');
    position = -static_cast<std::int64_t>(first == std::string_view::npos ? 0 : first);
  }
  std::int64_t exponent = 0;
  for (const char c : d.exponent) {
    exponent = std::min<std::int64_t>(exponent * 10 + (c - '0'), 1'000'000'000);
  }
  return position + (d.exponent_negative ? -exponent : exponent) > 0;
}

}  // namespace

std::optional<double> ParseSampleValue(std::string_view token) {
  if (token.empty()) return std::nullopt;
  const bool negative = token[0] == '-';
  const std::string_view unsigned_part =
      (token[0] == '+' || token[0] == '-') ? token.substr(1) : token;
  if (EqualsIgnoringCase(unsigned_part, "inf") || EqualsIgnoringCase(unsigned_part, "infinity")) {
    const double inf = std::numeric_limits<double>::infinity();
    return negative ? -inf : inf;
  }
  // Go reads "nan" without a sign only.
  if (EqualsIgnoringCase(token, "nan")) return std::numeric_limits<double>::quiet_NaN();
  const std::optional<Decimal> decimal = SplitDecimal(unsigned_part);
  if (!decimal) return std::nullopt;
  double value = 0;
  const auto [end, error] =
      std::from_chars(unsigned_part.data(), unsigned_part.data() + unsigned_part.size(), value);
  if (error == std::errc::result_out_of_range) {
    if (TooLarge(*decimal)) return std::nullopt;
    value = 0;
  } else if (error != std::errc() || end != unsigned_part.data() + unsigned_part.size()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

std::optional<std::int64_t> ParseTimestamp(std::string_view token) {
  if (token.empty()) return std::nullopt;
  const bool negative = token[0] == '-';
  const std::string_view digits = (token[0] == '+' || negative) ? token.substr(1) : token;
  if (digits.empty()) return std::nullopt;
  for (const char c : digits) {
    if (!IsAsciiDigit(c)) return std::nullopt;
  }
  // Read the magnitude as unsigned so that the most negative value fits.
  std::uint64_t magnitude = 0;
  const auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (negative) {
    if (magnitude > kMax + 1) return std::nullopt;
    return magnitude == kMax + 1 ? std::numeric_limits<std::int64_t>::min()
                                 : -static_cast<std::int64_t>(magnitude);
  }
  if (magnitude > kMax) return std::nullopt;
  return static_cast<std::int64_t>(magnitude);
}

bool IsValidUtf8(std::string_view text) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char low = 0x80;  // the range of the second byte
    unsigned char high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;   // no overlong forms
      if (c == 0xED) high = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;  // nothing past U+10FFFF
    } else {
      return false;
    }
    if (n - i < length) return false;
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (second < low || second > high) return false;
    for (std::size_t k = 2; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if (next < 0x80 || next > 0xBF) return false;
    }
    i += length;
  }
  return true;
}

QuotedScan ScanQuoted(std::string_view line, std::size_t open) {
  QuotedScan scan;
  std::size_t i = open + 1;
  while (true) {
    if (i >= line.size()) {
      scan.error = QuotedError::kUnterminated;
      return scan;
    }
    const char c = line[i];
    if (c == '"') break;
    if (c == '\\') {
      if (i + 1 >= line.size()) {
        scan.error = QuotedError::kUnterminated;
        return scan;
      }
      const char next = line[i + 1];
      if (next != '\\' && next != '"' && next != 'n') {
        scan.error = QuotedError::kBadEscape;
        return scan;
      }
      scan.escaped = true;
      i += 2;
      continue;
    }
    ++i;
  }
  if (!IsValidUtf8(line.substr(open + 1, i - open - 1))) {
    scan.error = QuotedError::kBadUtf8;
    return scan;
  }
  scan.end = i + 1;
  return scan;
}

bool Unescape(std::string_view raw, std::string* out) {
  if (out != nullptr) out->clear();
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '\\') {
      if (i + 1 >= raw.size()) return false;
      const char next = raw[++i];
      if (next == 'n') {
        c = '\n';
      } else if (next == '\\' || next == '"') {
        c = next;
      } else {
        return false;
      }
    }
    if (out != nullptr) out->push_back(c);
  }
  return true;
}

std::string Unescape(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  Unescape(raw, &out);
  return out;
}

}  // namespace eoc::signals
