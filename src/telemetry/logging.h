// Structured logs: one JSON object per line on stderr, as `kubectl logs` and log collectors
// (Fluent Bit, Vector, Loki) read them. spdlog does the writing; this adds the JSON shape.
//
//   eoc::telemetry::SetLogLevel(eoc::telemetry::ParseLogLevel(flag_log_level));  // may throw
//   eoc::telemetry::Logger log("reflector");
//   log.Info("relisted", {{"resource", "pods"}, {"items", 200}});
//   // {"ts":"2026-11-30T10:00:00.123Z","level":"info","logger":"reflector","msg":"relisted",
//   //  "resource":"pods","items":200}
//   if (log.Enabled(eoc::telemetry::LogLevel::kDebug)) log.Debug("state", {{"dump", Dump()}});
//
// Field keys `ts`, `level`, `logger` and `msg` are taken by the line itself; do not reuse them.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

namespace spdlog {
class logger;
namespace sinks {
class sink;
}  // namespace sinks
}  // namespace spdlog

namespace eoc::telemetry {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// A --log-level value: "debug", "info", "warn" or "error". Throws std::invalid_argument that quotes
// `value` for anything else.
LogLevel ParseLogLevel(std::string_view value);
// "debug", "info", "warn" or "error", as written in the `level` field.
std::string_view LogLevelName(LogLevel level);

// The process-wide level below which lines are dropped; kInfo until set. Thread-safe.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

// The value of one field. Implicit conversions keep call sites short; a string value is a view,
// so it must outlive the call (temporaries do).
class LogValue {
 public:
  LogValue(std::string_view text) : value_(text) {}
  LogValue(const char* text) : value_(text == nullptr ? std::string_view() : text) {}
  LogValue(const std::string& text) : value_(std::string_view(text)) {}
  LogValue(bool flag) : value_(flag) {}
  template <std::signed_integral T>
  LogValue(T number) : value_(static_cast<std::int64_t>(number)) {}
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) LogValue(T number)
      : value_(static_cast<std::uint64_t>(number)) {}
  template <std::floating_point T>
  LogValue(T number) : value_(static_cast<double>(number)) {}

  // Appends the value as JSON: a string, a number, true or false. NaN and infinities, which JSON
  // has no numbers for, are written as the strings "NaN", "+Inf" and "-Inf" (as Prometheus does).
  void AppendJson(std::string& out) const;

 private:
  std::variant<std::string_view, std::int64_t, std::uint64_t, double, bool> value_;
};

struct LogField {
  std::string_view key;
  LogValue value;
};

// A named logger. Cheap to copy; all copies and all loggers share one stderr writer, and each line
// is written whole, so loggers may be used from any thread.
class Logger {
 public:
  explicit Logger(std::string name);
  // Writes to `sink` instead of stderr (tests pass an spdlog ostream_sink_mt). The sink's formatter
  // is replaced by the JSON one.
  Logger(std::string name, std::shared_ptr<spdlog::sinks::sink> sink);

  bool Enabled(LogLevel level) const { return level >= GetLogLevel(); }

  void Log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) const;
  void Debug(std::string_view msg, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kDebug, msg, fields);
  }
  void Info(std::string_view msg, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kInfo, msg, fields);
  }
  void Warn(std::string_view msg, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kWarn, msg, fields);
  }
  void Error(std::string_view msg, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kError, msg, fields);
  }

 private:
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace eoc::telemetry
