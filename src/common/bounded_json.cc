#include "common/bounded_json.h"

#include <algorithm>

#include "common/text.h"

namespace eoc {
namespace {

using nlohmann::json;

// Thrown from the parser's callback to stop it at the first level too deep.
struct TooDeep {};

// "byte 57 (line 4, column 5)" for the `byte`th byte of `text` (from 1, as nlohmann counts; past
// the end for a document cut short), lines and columns from 1 as editors count them.
std::string Position(std::string_view text, std::size_t byte) {
  const std::string_view before = text.substr(0, std::min(byte == 0 ? 0 : byte - 1, text.size()));
  const std::size_t line = 1 + static_cast<std::size_t>(std::ranges::count(before, '\n'));
  const std::size_t last_break = before.rfind('\n');
  const std::size_t column =
      1 + (last_break == std::string_view::npos ? before.size() : before.size() - last_break - 1);
  return "byte " + std::to_string(byte) + " (line " + std::to_string(line) + ", column " +
         std::to_string(column) + ")";
}

}  // namespace

std::optional<json> ParseBoundedJson(std::string_view text, const JsonLimits& limits,
                                     std::string& error) {
  if (text.size() > limits.max_bytes) {
    error = std::to_string(text.size()) + " bytes, over the limit of " +
            std::to_string(limits.max_bytes);
    return std::nullopt;
  }
  // The callback sees each object and array as it opens, with the number of those around it.
  const json::parser_callback_t check_depth = [&limits](int depth, json::parse_event_t event,
                                                        json& /*parsed*/) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        static_cast<std::size_t>(depth) >= limits.max_depth) {
      throw TooDeep{};
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check_depth);
  } catch (const TooDeep&) {
    error = "nested deeper than " + std::to_string(limits.max_depth) + " levels";
  } catch (const json::parse_error& e) {
    // Only the position: nlohmann's message quotes the token it stopped at, of any length.
    error = "not valid JSON at " + Position(text, e.byte);
  } catch (const json::out_of_range&) {
    error = "not valid JSON: a number out of range";
  }
  return std::nullopt;
}

std::string DescribeJson(const json& value) {
  if (value.is_string()) return Quoted(value.get_ref<const std::string&>());
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  return value.dump();  // a number, boolean or null: a few bytes
}

}  // namespace eoc
