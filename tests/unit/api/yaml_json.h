// YAML manifests as the JSON that kubectl sends for them: plain scalars that read as integers,
// numbers, booleans or null become those, quoted scalars stay strings. For tests that read the
// CRD and its samples.
//
//   nlohmann::json pool = eoc::api::testing::LoadYamlFile(EOC_CRDS_DIR "/samples/vllm-pool.yaml");
//   auto parsed = eoc::api::ParseInferencePool(pool);
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>

namespace eoc::api::testing {

nlohmann::json YamlToJson(const YAML::Node& node);

// The first document of a YAML file; throws when it cannot be read or parsed.
nlohmann::json LoadYamlFile(const std::string& path);

}  // namespace eoc::api::testing
