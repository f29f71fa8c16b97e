#include "common/yaml_json.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <system_error>

#include "common/files.h"

namespace eoc {
namespace {

bool OneOf(std::string_view text, std::initializer_list<std::string_view> words) {
  return std::ranges::any_of(words, [&](std::string_view w) { return text == w; });
}

// [-+]?[0-9]+, whole.
bool IsInteger(std::string_view text) {
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) text.remove_prefix(1);
  return !text.empty() && std::ranges::all_of(text, [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, whole.
bool IsFloat(std::string_view text) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  std::size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == text.size();
}

nlohmann::json PlainScalar(const std::string& text) {
  if (OneOf(text, {"true", "True", "TRUE"})) return true;
  if (OneOf(text, {"false", "False", "FALSE"})) return false;
  if (OneOf(text, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (IsInteger(text)) {
    std::int64_t value = 0;
    const char* begin = text.data() + (text.front() == '+' ? 1 : 0);
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size()) return value;
    // Too large for 64 bits: a number all the same, as JSON has it.
  }
  if (IsInteger(text) || IsFloat(text)) {
    double value = 0;
    const char* begin = text.data() + (text.front() == '+' ? 1 : 0);
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size() && std::isfinite(value)) {
      return value;
    }
  }
  return text;
}

nlohmann::json Convert(const YAML::Node& node, std::size_t depth) {
  if (depth > kMaxYamlDepth) {
    throw YAML::ParserException(
        node.Mark(), "nested more than " + std::to_string(kMaxYamlDepth) + " levels deep");
  }
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          throw YAML::ParserException(entry.first.Mark(), "a mapping key must be a scalar");
        }
        out[entry.first.Scalar()] = Convert(entry.second, depth + 1);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(Convert(item, depth + 1));
      return out;
    }
    case YAML::NodeType::Scalar:
      // yaml-cpp tags a quoted scalar "!" and a plain one "?".
      if (node.Tag() == "!") return node.Scalar();
      return PlainScalar(node.Scalar());
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
  }
  return nullptr;
}

std::string Where(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) +
         ": ";
}

}  // namespace

nlohmann::json YamlToJson(const YAML::Node& node) { return Convert(node, 0); }

std::optional<nlohmann::json> ParseYaml(std::string_view text, std::string& error) {
  try {
    return YamlToJson(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    error = Where(e.mark) + e.msg;
  } catch (const std::exception& e) {
    error = e.what();
  }
  return std::nullopt;
}

std::optional<nlohmann::json> LoadYamlFile(const std::string& path, std::size_t max_bytes,
                                           std::string& error) {
  std::string why;
  const std::optional<std::string> text = ReadFileLimited(path, max_bytes, &why);
  if (!text) {
    error = path + ": " + why;
    return std::nullopt;
  }
  std::optional<nlohmann::json> doc = ParseYaml(*text, why);
  if (!doc) error = path + ": " + why;
  return doc;
}

}  // namespace eoc
