#include "yaml_json.h"

#include <regex>

namespace eoc::api::testing {
namespace {

nlohmann::json PlainScalar(const std::string& text) {
  static const std::regex kInteger("[-+]?[0-9]+");
  static const std::regex kFloat(R"([-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)");
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  if (std::regex_match(text, kInteger)) return std::stoll(text);
  if (std::regex_match(text, kFloat)) return std::stod(text);
  return text;
}

}  // namespace

nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node) out[entry.first.as<std::string>()] = YamlToJson(entry.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(YamlToJson(item));
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

nlohmann::json LoadYamlFile(const std::string& path) { return YamlToJson(YAML::LoadFile(path)); }

}  // namespace eoc::api::testing
