#include "common/rfc3339.h"

#include <array>
#include <cstdint>
#include <cstdio>

namespace eoc {
namespace {

// The decimal number in s[pos, pos + n), or nullopt when that is not all digits.
std::optional<int> Digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int value = 0;
  for (const char c : s.substr(pos, n)) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool CharAt(std::string_view s, std::size_t pos, std::string_view any_of) {
  return pos < s.size() && any_of.find(s[pos]) != std::string_view::npos;
}

// ".123456789" at `*pos` (more digits than nanoseconds are read and ignored); zero when absent.
std::optional<std::chrono::nanoseconds> ParseFraction(std::string_view s, std::size_t* pos) {
  if (!CharAt(s, *pos, ".")) return std::chrono::nanoseconds(0);
  const std::size_t start = ++*pos;
  std::int64_t nanos = 0;
  int digits = 0;
  for (; CharAt(s, *pos, "0123456789"); ++*pos) {
    if (digits < 9) {
      nanos = nanos * 10 + (s[*pos] - '0');
      ++digits;
    }
  }
  if (*pos == start) return std::nullopt;
  for (; digits < 9; ++digits) nanos *= 10;
  return std::chrono::nanoseconds(nanos);
}

// "Z", "+hh:mm" or "-hh:mm" at `pos`, which must end `s`: what to add to local time to get UTC.
std::optional<std::chrono::minutes> ParseOffset(std::string_view s, std::size_t pos) {
  if (CharAt(s, pos, "Zz")) {
    if (pos + 1 != s.size()) return std::nullopt;
    return std::chrono::minutes(0);
  }
  const std::optional<int> hours = Digits(s, pos + 1, 2);
  const std::optional<int> minutes = Digits(s, pos + 4, 2);
  if (!CharAt(s, pos, "+-") || !hours || !CharAt(s, pos + 3, ":") || !minutes || *hours > 23 ||
      *minutes > 59 || pos + 6 != s.size()) {
    return std::nullopt;
  }
  const std::chrono::minutes east = std::chrono::hours(*hours) + std::chrono::minutes(*minutes);
  return s[pos] == '+' ? -east : east;
}

// "YYYY-MM-DDTHH:MM:SS" then `fraction_digits` digits of the second (0: none), then "Z".
template <class Precision>
std::string Format(std::chrono::system_clock::time_point t, int fraction_digits) {
  using namespace std::chrono;
  const auto at = floor<Precision>(t);
  const auto day = floor<days>(at);
  const year_month_day date(day);
  const hh_mm_ss time(at - day);
  std::array<char, 40> text{};
  int n = std::snprintf(text.data(), text.size(), "%04d-%02u-%02uT%02d:%02d:%02d",
                        static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                        static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                        static_cast<int>(time.minutes().count()),
                        static_cast<int>(time.seconds().count()));
  if (fraction_digits > 0) {
    n += std::snprintf(text.data() + n, text.size() - static_cast<std::size_t>(n), ".%0*lld",
                       fraction_digits, static_cast<long long>(time.subseconds().count()));
  }
  std::snprintf(text.data() + n, text.size() - static_cast<std::size_t>(n), "Z");
  return text.data();
}

}  // namespace

std::string FormatRfc3339(std::chrono::system_clock::time_point t) {
  return Format<std::chrono::seconds>(t, 0);
}

std::string FormatRfc3339Micro(std::chrono::system_clock::time_point t) {
  return Format<std::chrono::microseconds>(t, 6);
}

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS at fixed positions, then the optional fraction and the offset.
  const std::optional<int> year = Digits(text, 0, 4);
  const std::optional<int> month = Digits(text, 5, 2);
  const std::optional<int> day = Digits(text, 8, 2);
  const std::optional<int> hour = Digits(text, 11, 2);
  const std::optional<int> minute = Digits(text, 14, 2);
  const std::optional<int> second = Digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second || !CharAt(text, 4, "-") ||
      !CharAt(text, 7, "-") || !CharAt(text, 10, "Tt") || !CharAt(text, 13, ":") ||
      !CharAt(text, 16, ":") || *hour > 23 || *minute > 59 || *second > 59) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  const std::optional<std::chrono::nanoseconds> fraction = ParseFraction(text, &pos);
  if (!fraction) return std::nullopt;
  const std::optional<std::chrono::minutes> to_utc = ParseOffset(text, pos);
  if (!to_utc) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(*year),
                                         std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok()) return std::nullopt;
  const auto time = std::chrono::sys_days(date) + std::chrono::hours(*hour) +
                    std::chrono::minutes(*minute) + std::chrono::seconds(*second) + *fraction +
                    *to_utc;
  return std::chrono::time_point_cast<std::chrono::system_clock::duration>(time);
}

}  // namespace eoc
