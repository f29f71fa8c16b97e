#include "server/wire.h"

#include <array>
#include <boost/beast/http/status.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>

namespace eoc::server::internal {
namespace {

std::string_view ReasonPhrase(int status) {
  const auto reason = boost::beast::http::obsolete_reason(
      boost::beast::http::int_to_status(static_cast<unsigned>(status)));
  return {reason.data(), reason.size()};
}

void AppendNumber(std::string& out, std::size_t n) {
  std::array<char, 24> digits{};
  const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), n);
  out.append(digits.data(), result.ptr);
}

void AppendTwoDigits(std::string& out, unsigned n) {
  out += static_cast<char>('0' + n / 10);
  out += static_cast<char>('0' + n % 10);
}

// "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n" (RFC 9110 5.6.7), which an origin server with a clock
// must send. Formatted once a second per thread, so the hot path only compares a number.
std::string_view DateLine() {
  thread_local std::int64_t cached_second = -1;
  thread_local std::string line;
  using std::chrono::days;
  using std::chrono::floor;
  const auto now = floor<std::chrono::seconds>(std::chrono::system_clock::now());
  const std::int64_t second = now.time_since_epoch().count();
  if (second == cached_second) return line;
  cached_second = second;

  constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed",
                                                     "Thu", "Fri", "Sat"};
  constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const auto day = floor<days>(now);
  const std::chrono::year_month_day ymd{day};
  const std::chrono::hh_mm_ss hms{now - day};
  line = "Date: ";
  line += kDays[std::chrono::weekday(day).c_encoding()];
  line += ", ";
  AppendTwoDigits(line, static_cast<unsigned>(ymd.day()));
  line += ' ';
  line += kMonths[static_cast<unsigned>(ymd.month()) - 1];
  line += ' ';
  AppendNumber(line, static_cast<std::size_t>(static_cast<int>(ymd.year())));
  line += ' ';
  AppendTwoDigits(line, static_cast<unsigned>(hms.hours().count()));
  line += ':';
  AppendTwoDigits(line, static_cast<unsigned>(hms.minutes().count()));
  line += ':';
  AppendTwoDigits(line, static_cast<unsigned>(hms.seconds().count()));
  line += " GMT\r\n";
  return line;
}

// 204 and 304 carry no body and so no framing (RFC 9110 8.6).
bool IsBodiless(int status) { return status == 204 || status == 304; }

}  // namespace

void SerializeHead(const Response& response, const Framing& framing, std::string& out) {
  const int status = response.status();
  out.assign("HTTP/1.1 ");
  AppendNumber(out, static_cast<std::size_t>(status));
  out += ' ';
  out += ReasonPhrase(status);
  out += "\r\n";
  out += DateLine();
  if (!IsBodiless(status)) {
    if (!response.body().empty() && !response.content_type().empty()) {
      out += "Content-Type: ";
      out += response.content_type();
      out += "\r\n";
    }
    out += "Content-Length: ";
    AppendNumber(out, response.body().size());
    out += "\r\n";
  }
  if (!framing.keep_alive) {
    out += "Connection: close\r\n";
  } else if (framing.http10) {
    out += "Connection: keep-alive\r\n";
  }
  out += response.header_lines();
  out += "\r\n";
}

std::string_view BodyToSend(const Response& response, const Framing& framing) {
  if (framing.omit_body || IsBodiless(response.status())) return {};
  return response.body();
}

}  // namespace eoc::server::internal
