#include "telemetry/logging.h"

#include <spdlog/formatter.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include "common/text.h"
#include "telemetry/json_text.h"

namespace eoc::telemetry {
namespace {

std::atomic<LogLevel> g_level{LogLevel::kInfo};

spdlog::level::level_enum ToSpdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::err;
}

std::string_view SpdlogLevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    default:
      return "error";
  }
}

void Append(spdlog::memory_buf_t& dest, std::string_view text) {
  dest.append(text.data(), text.data() + text.size());
}

// {"ts":"...","level":"...","logger":"...", then the message and fields that Logger::Log rendered
// as the payload, then }. spdlog supplies the time, level and name, so this formatter also serves
// lines logged through spdlog directly, as long as their payload is such a fragment.
class JsonLineFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using std::chrono::days;
    using std::chrono::milliseconds;
    const auto day = std::chrono::floor<days>(msg.time);
    const std::chrono::year_month_day ymd{day};
    const std::chrono::hh_mm_ss hms{std::chrono::floor<milliseconds>(msg.time - day)};
    fmt::format_to(std::back_inserter(dest),
                   R"({{"ts":"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z","level":"{}","logger":)",
                   static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                   static_cast<unsigned>(ymd.day()), hms.hours().count(), hms.minutes().count(),
                   hms.seconds().count(), hms.subseconds().count(), SpdlogLevelName(msg.level));
    std::string name;
    AppendJsonString(name, std::string_view(msg.logger_name.data(), msg.logger_name.size()));
    Append(dest, name);
    Append(dest, ",");
    Append(dest, std::string_view(msg.payload.data(), msg.payload.size()));
    Append(dest, "}\n");
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLineFormatter>();
  }
};

std::shared_ptr<spdlog::sinks::sink> WithJsonFormat(std::shared_ptr<spdlog::sinks::sink> sink) {
  sink->set_formatter(std::make_unique<JsonLineFormatter>());
  return sink;
}

// One writer for the whole process: its mutex keeps lines from different loggers whole.
const std::shared_ptr<spdlog::sinks::sink>& StderrSink() {
  static const std::shared_ptr<spdlog::sinks::sink> sink =
      WithJsonFormat(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  return sink;
}

void AppendNumber(std::string& out, auto number) {
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), number);
  out.append(buffer.data(), result.ptr);
}

}  // namespace

LogLevel ParseLogLevel(std::string_view value) {
  if (value == "debug") return LogLevel::kDebug;
  if (value == "info") return LogLevel::kInfo;
  if (value == "warn") return LogLevel::kWarn;
  if (value == "error") return LogLevel::kError;
  throw std::invalid_argument("log level " + Quoted(value) +
                              " is not one of debug, info, warn, error");
}

std::string_view LogLevelName(LogLevel level) { return SpdlogLevelName(ToSpdlog(level)); }

void SetLogLevel(LogLevel level) { g_level.store(level, std::memory_order_relaxed); }

LogLevel GetLogLevel() { return g_level.load(std::memory_order_relaxed); }

void LogValue::AppendJson(std::string& out) const {
  if (const auto* text = std::get_if<std::string_view>(&value_)) {
    AppendJsonString(out, *text);
  } else if (const auto* flag = std::get_if<bool>(&value_)) {
    out += *flag ? "true" : "false";
  } else if (const auto* real = std::get_if<double>(&value_)) {
    if (std::isnan(*real)) {
      out += R"("NaN")";
    } else if (std::isinf(*real)) {
      out += *real > 0 ? R"("+Inf")" : R"("-Inf")";
    } else {
      AppendNumber(out, *real);  // shortest form that reads back exactly; always valid JSON
    }
  } else if (const auto* signed_number = std::get_if<std::int64_t>(&value_)) {
    AppendNumber(out, *signed_number);
  } else {
    AppendNumber(out, std::get<std::uint64_t>(value_));
  }
}

Logger::Logger(std::string name) : Logger(std::move(name), StderrSink()) {}

Logger::Logger(std::string name, std::shared_ptr<spdlog::sinks::sink> sink) {
  if (sink != StderrSink()) WithJsonFormat(sink);
  logger_ = std::make_shared<spdlog::logger>(std::move(name), std::move(sink));
  // The process-wide level in GetLogLevel() is the only filter.
  logger_->set_level(spdlog::level::trace);
}

void Logger::Log(LogLevel level, std::string_view msg,
                 std::initializer_list<LogField> fields) const {
  if (!Enabled(level)) return;
  std::string payload;
  payload.reserve(64 + msg.size() + 32 * fields.size());
  payload += R"("msg":)";
  AppendJsonString(payload, msg);
  for (const LogField& field : fields) {
    payload += ',';
    AppendJsonString(payload, field.key);
    payload += ':';
    field.value.AppendJson(payload);
  }
  logger_->log(ToSpdlog(level), spdlog::string_view_t(payload.data(), payload.size()));
}

}  // namespace eoc::telemetry
