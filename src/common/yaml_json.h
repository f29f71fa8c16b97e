// YAML documents read as the JSON that kubectl would send for them, so that YAML files (the
// simulator's scenarios, the CRD's samples in tests) go through the same JSON readers as API
// objects: plain scalars that read as integers, numbers, booleans or null (YAML 1.2's core schema)
// become those; quoted scalars stay strings; anchors and aliases are expanded.
//
//   std::string error;
//   std::optional<nlohmann::json> doc = eoc::LoadYamlFile("scenario.yaml", 1 << 20, error);
//   if (!doc) die(error);   // "scenario.yaml: line 7, column 3: end of map not found"
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace eoc {

// A node as JSON. Mapping keys are their scalar text (a key that is not a scalar throws
// YAML::Exception); a document nested deeper than kMaxYamlDepth throws too, as no document of
// ours nests so deep and the conversion recurses.
inline constexpr std::size_t kMaxYamlDepth = 64;
nlohmann::json YamlToJson(const YAML::Node& node);

// The first document of `text` as JSON; nullopt with `error` saying where and what ("line 7,
// column 3: ...", lines from 1) when it is not YAML. An empty document is null.
std::optional<nlohmann::json> ParseYaml(std::string_view text, std::string& error);

// The first document of the file at `path`, at most `max_bytes` long; nullopt with `error` (which
// starts with the path) when it cannot be read, is larger, or is not YAML.
std::optional<nlohmann::json> LoadYamlFile(const std::string& path, std::size_t max_bytes,
                                           std::string& error);

}  // namespace eoc
