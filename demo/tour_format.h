// Column formatting for the demo's tables of picks and shares.
//
//   std::cout << Pad("pod", 16) << Right(Percent(0.25), 7);   // "pod                25.0%"
#pragma once

#include <cstddef>
#include <iomanip>
#include <sstream>
#include <string>
#include <string_view>

namespace eoc::demo {

// `text`, padded with spaces on the right to `width`.
inline std::string Pad(std::string_view text, std::size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

// `text`, padded with spaces on the left to `width`.
inline std::string Right(const std::string& text, std::size_t width) {
  return text.size() < width ? std::string(width - text.size(), ' ') + text : text;
}

// `value` with `precision` digits after the point.
inline std::string Fixed(double value, int precision) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << value;
  return out.str();
}

// A fraction as a percentage with one decimal: "25.0%".
inline std::string Percent(double fraction) { return Fixed(100 * fraction, 1) + "%"; }

}  // namespace eoc::demo
